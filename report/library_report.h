// The shipped libraries as text (`project --list-models`, `--list-gpus`): one line per model
// (layers, hidden size, experts, parameters) or GPU profile (CUs/SMs, bf16 peak, HBM, GPUs per
// node); an entry that fails to load shows its error instead.
#ifndef PROJECTOR_REPORT_LIBRARY_REPORT_H_
#define PROJECTOR_REPORT_LIBRARY_REPORT_H_

#include <string>

namespace projector {

std::string ModelLibraryText();
std::string GpuLibraryText();

}  // namespace projector

#endif  // PROJECTOR_REPORT_LIBRARY_REPORT_H_
