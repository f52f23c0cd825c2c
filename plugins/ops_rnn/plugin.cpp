// plugin.cpp - the ops_rnn pack: RNN, GRU and LSTM on the CPU, with every
// timestep's input projection done as one OpenBLAS product.
#include "registry.hpp"

SINGA_PLUGIN("ops_rnn", "0.1.0", "recurrent ops RNN, GRU, LSTM (CPU, OpenBLAS)") {
  using namespace singa::ops::rnn;
  register_rnn(reg);
  register_gru(reg);
  register_lstm(reg);
}
