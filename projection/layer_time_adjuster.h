// Hook between op timing and layer composition: Project() hands every timed module and every
// composed layer to it, so that times known better than the backends' (measured module times in
// profile mode, projection/profile_mode.h) replace theirs before the pipeline and step are
// composed.
#ifndef PROJECTOR_PROJECTION_LAYER_TIME_ADJUSTER_H_
#define PROJECTOR_PROJECTION_LAYER_TIME_ADJUSTER_H_

#include <string_view>

#include "backends/collective_backend.h"
#include "profilers/module_profilers.h"
#include "projection/layer_composer.h"

namespace projector {

// Implementations are immutable after construction and used from one projection at a time.
// `kind` names the group: "dense" or "moe" (a transformer layer), "embedding" or "output".
class LayerTimeAdjuster {
 public:
  virtual ~LayerTimeAdjuster() = default;
  // A module whose ops the backends have timed; may change op time, clock_scaled_time and
  // provenance.
  virtual void AdjustModule(std::string_view kind, ModuleProfile& module) const = 0;
  // The collective backend that times the collectives the layer composer adds to a `kind`
  // layer; `composing` (the projection's own) when nothing changes.
  virtual const CollectiveBackend& LayerCollective(std::string_view kind,
                                                   const CollectiveBackend& composing) const = 0;
  // A composed `kind` layer; may rescale its phases.
  virtual void AdjustComposedLayer(std::string_view kind, ComposedLayer& layer) const = 0;
};

}  // namespace projector

#endif  // PROJECTOR_PROJECTION_LAYER_TIME_ADJUSTER_H_
