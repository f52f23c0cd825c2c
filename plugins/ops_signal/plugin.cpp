// plugin.cpp - the ops_signal pack: Fourier transforms (DFT, STFT), the
// window generators and the mel filter bank of ONNX opset 17, on the CPU.
#include "registry.hpp"

SINGA_PLUGIN("ops_signal", "0.1.0", "signal processing DFT, STFT, windows, MelWeightMatrix (CPU)") {
  using namespace singa::ops::signal;
  register_dft(reg);
  register_stft(reg);
  register_windows(reg);
  register_mel(reg);
}
