"""``torch.nn.modules.rnn``."""

from ._export import export

export(globals(), ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"])
