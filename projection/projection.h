// Projection of one training step: composes the timed op lists of the module profilers into
// layers (with TP/CP/EP communication and overlap), pipeline stages and schedules, DP/FSDP
// gradient and weight communication and the optimizer step; estimates memory per GPU; and
// derives TGS, TFLOP/s per GPU and MFU.
#ifndef PROJECTOR_PROJECTION_PROJECTION_H_
#define PROJECTOR_PROJECTION_PROJECTION_H_

// Owned by the projection engineer; see projection.cc. (Placeholder until it lands.)

#endif  // PROJECTOR_PROJECTION_PROJECTION_H_
