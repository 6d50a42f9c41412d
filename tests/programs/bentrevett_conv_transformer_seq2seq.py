"""bentrevett/pytorch-seq2seq's convolutional (notebook 5) and Transformer (notebook 6) sequence-to-sequence
models, at tiny sizes on a synthetic "translation" (reverse the source and shift its tokens), batch first.
``MODEL`` picks one.

Idioms: ``self.scale = torch.sqrt(torch.FloatTensor([0.5])).to(device)`` as a plain attribute (no buffer) that
scales residuals (``(conved + conv_input) * self.scale``); ``assert kernel_size % 2 == 1, "Kernel size must
be odd!"``; ``pos = torch.arange(0, src_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)``;
``nn.ModuleList`` of ``nn.Conv1d(in_channels = hid_dim, out_channels = 2 * hid_dim, kernel_size = kernel_size,
padding = (kernel_size - 1) // 2)``; ``F.glu(conved, dim = 1)``; the decoder's causal padding ``torch.zeros(
batch_size, hid_dim, self.kernel_size - 1).fill_(self.trg_pad_idx).to(self.device)`` concatenated on ``dim = 2``;
``calculate_attention`` by ``torch.matmul(combined, encoder_conved.permute(0, 2, 1))`` and ``F.softmax(energy,
dim=2)``; ``output.contiguous().view(-1, output_dim)`` and ``trg[:,1:].contiguous().view(-1)``; the
Transformer's ``self.scale = torch.sqrt(torch.FloatTensor([self.head_dim])).to(device)`` dividing ``torch.matmul(Q,
K.permute(0, 1, 3, 2))``, ``Q.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)``,
``energy.masked_fill(mask == 0, -1e10)``, ``torch.softmax(energy, dim = -1)``, ``x.permute(0, 2, 1,
3).contiguous()``, ``(self.tok_embedding(src) * self.scale) + self.pos_embedding(pos)``, ``make_trg_mask`` by
``trg_pad_mask & torch.tril(torch.ones((trg_len, trg_len), device = self.device)).bool()``;
``initialize_weights`` by ``if hasattr(m, 'weight') and m.weight.dim() > 1: nn.init.xavier_uniform_(
m.weight.data)`` through ``model.apply``; ``translate_sentence`` decoding greedily with
``torch.LongTensor(trg_indexes).unsqueeze(0)``, ``output.argmax(2)[:,-1].item()`` and the attention returned.
"""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

MODEL = "conv"  # or "transformer"
DROPOUT = 0.25
SRC_VOCAB = 12
TRG_VOCAB = 13
PAD_IDX, SOS_IDX, EOS_IDX = 1, 2, 3
BATCH_SIZE = 4
EMB_DIM = 6
HID_DIM = 8
ENC_LAYERS = DEC_LAYERS = 2
ENC_KERNEL_SIZE = DEC_KERNEL_SIZE = 3
N_HEADS = 2
PF_DIM = 12
CLIP = 0.1
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


# -------------------------------------------------------------------------------- 5: convolutional
class ConvEncoder(nn.Module):
    def __init__(self, input_dim, emb_dim, hid_dim, n_layers, kernel_size, dropout, device, max_length=100):
        super().__init__()
        assert kernel_size % 2 == 1, "Kernel size must be odd!"
        self.device = device
        self.scale = torch.sqrt(torch.FloatTensor([0.5])).to(device)
        self.tok_embedding = nn.Embedding(input_dim, emb_dim)
        self.pos_embedding = nn.Embedding(max_length, emb_dim)
        self.emb2hid = nn.Linear(emb_dim, hid_dim)
        self.hid2emb = nn.Linear(hid_dim, emb_dim)
        self.convs = nn.ModuleList(
            [
                nn.Conv1d(
                    in_channels=hid_dim,
                    out_channels=2 * hid_dim,
                    kernel_size=kernel_size,
                    padding=(kernel_size - 1) // 2,
                )
                for _ in range(n_layers)
            ]
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        # src = [batch size, src len]
        batch_size = src.shape[0]
        src_len = src.shape[1]
        # create position tensor
        pos = torch.arange(0, src_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)
        # pos = [0, 1, 2, 3, ..., src len - 1]
        tok_embedded = self.tok_embedding(src)
        pos_embedded = self.pos_embedding(pos)
        # combine embeddings by elementwise summing
        embedded = self.dropout(tok_embedded + pos_embedded)
        # pass embedded through linear layer to convert from emb dim to hid dim
        conv_input = self.emb2hid(embedded)
        # permute for convolutional layer
        conv_input = conv_input.permute(0, 2, 1)
        # conv_input = [batch size, hid dim, src len]
        for i, conv in enumerate(self.convs):  # noqa: B007
            # pass through convolutional layer
            conved = conv(self.dropout(conv_input))
            # conved = [batch size, 2 * hid dim, src len]
            # pass through GLU activation function
            conved = F.glu(conved, dim=1)
            # apply residual connection
            conved = (conved + conv_input) * self.scale
            # set conv_input to conved for next loop iteration
            conv_input = conved
        # permute and convert back to emb dim
        conved = self.hid2emb(conved.permute(0, 2, 1))
        # elementwise sum output (conved) and input (embedded) to be used for attention
        combined = (conved + embedded) * self.scale
        return conved, combined


class ConvDecoder(nn.Module):
    def __init__(
        self, output_dim, emb_dim, hid_dim, n_layers, kernel_size, dropout, trg_pad_idx, device, max_length=100
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.trg_pad_idx = trg_pad_idx
        self.device = device
        self.scale = torch.sqrt(torch.FloatTensor([0.5])).to(device)
        self.tok_embedding = nn.Embedding(output_dim, emb_dim)
        self.pos_embedding = nn.Embedding(max_length, emb_dim)
        self.emb2hid = nn.Linear(emb_dim, hid_dim)
        self.hid2emb = nn.Linear(hid_dim, emb_dim)
        self.attn_hid2emb = nn.Linear(hid_dim, emb_dim)
        self.attn_emb2hid = nn.Linear(emb_dim, hid_dim)
        self.fc_out = nn.Linear(emb_dim, output_dim)
        self.convs = nn.ModuleList(
            [nn.Conv1d(in_channels=hid_dim, out_channels=2 * hid_dim, kernel_size=kernel_size) for _ in range(n_layers)]
        )
        self.dropout = nn.Dropout(dropout)

    def calculate_attention(self, embedded, conved, encoder_conved, encoder_combined):
        # permute and convert back to emb dim
        conved_emb = self.attn_hid2emb(conved.permute(0, 2, 1))
        combined = (conved_emb + embedded) * self.scale
        energy = torch.matmul(combined, encoder_conved.permute(0, 2, 1))
        # energy = [batch size, trg len, src len]
        attention = F.softmax(energy, dim=2)
        attended_encoding = torch.matmul(attention, encoder_combined)
        # convert from emb dim -> hid dim
        attended_encoding = self.attn_emb2hid(attended_encoding)
        # apply residual connection
        attended_combined = (conved + attended_encoding.permute(0, 2, 1)) * self.scale
        return attention, attended_combined

    def forward(self, trg, encoder_conved, encoder_combined):
        batch_size = trg.shape[0]
        trg_len = trg.shape[1]
        pos = torch.arange(0, trg_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)
        tok_embedded = self.tok_embedding(trg)
        pos_embedded = self.pos_embedding(pos)
        embedded = self.dropout(tok_embedded + pos_embedded)
        conv_input = self.emb2hid(embedded)
        conv_input = conv_input.permute(0, 2, 1)
        batch_size = conv_input.shape[0]
        hid_dim = conv_input.shape[1]
        for i, conv in enumerate(self.convs):  # noqa: B007
            # apply dropout
            conv_input = self.dropout(conv_input)
            # need to pad so decoder can't "cheat"
            padding = torch.zeros(batch_size, hid_dim, self.kernel_size - 1).fill_(self.trg_pad_idx).to(self.device)
            padded_conv_input = torch.cat((padding, conv_input), dim=2)
            # padded_conv_input = [batch size, hid dim, trg len + kernel size - 1]
            conved = conv(padded_conv_input)
            conved = F.glu(conved, dim=1)
            # calculate attention
            attention, conved = self.calculate_attention(embedded, conved, encoder_conved, encoder_combined)
            # apply residual connection
            conved = (conved + conv_input) * self.scale
            conv_input = conved
        conved = self.hid2emb(conved.permute(0, 2, 1))
        output = self.fc_out(self.dropout(conved))
        # output = [batch size, trg len, output dim]
        return output, attention


class ConvSeq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, src, trg):
        # src = [batch size, src len]
        # trg = [batch size, trg len - 1] (<eos> token sliced off the end)
        encoder_conved, encoder_combined = self.encoder(src)
        output, attention = self.decoder(trg, encoder_conved, encoder_combined)
        return output, attention


# -------------------------------------------------------------------------------------- 6: Transformer
class MultiHeadAttentionLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, dropout, device):
        super().__init__()
        assert hid_dim % n_heads == 0
        self.hid_dim = hid_dim
        self.n_heads = n_heads
        self.head_dim = hid_dim // n_heads
        self.fc_q = nn.Linear(hid_dim, hid_dim)
        self.fc_k = nn.Linear(hid_dim, hid_dim)
        self.fc_v = nn.Linear(hid_dim, hid_dim)
        self.fc_o = nn.Linear(hid_dim, hid_dim)
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.sqrt(torch.FloatTensor([self.head_dim])).to(device)

    def forward(self, query, key, value, mask=None):
        batch_size = query.shape[0]
        Q = self.fc_q(query)
        K = self.fc_k(key)
        V = self.fc_v(value)
        Q = Q.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        K = K.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        V = V.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        # Q = [batch size, n heads, query len, head dim]
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / self.scale
        # energy = [batch size, n heads, query len, key len]
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        attention = torch.softmax(energy, dim=-1)
        x = torch.matmul(self.dropout(attention), V)
        # x = [batch size, n heads, query len, head dim]
        x = x.permute(0, 2, 1, 3).contiguous()
        x = x.view(batch_size, -1, self.hid_dim)
        x = self.fc_o(x)
        return x, attention


class PositionwiseFeedforwardLayer(nn.Module):
    def __init__(self, hid_dim, pf_dim, dropout):
        super().__init__()
        self.fc_1 = nn.Linear(hid_dim, pf_dim)
        self.fc_2 = nn.Linear(pf_dim, hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = self.dropout(torch.relu(self.fc_1(x)))
        x = self.fc_2(x)
        return x


class EncoderLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, pf_dim, dropout, device):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(hid_dim)
        self.ff_layer_norm = nn.LayerNorm(hid_dim)
        self.self_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.positionwise_feedforward = PositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_mask):
        # self attention
        _src, _ = self.self_attention(src, src, src, src_mask)
        # dropout, residual connection and layer norm
        src = self.self_attn_layer_norm(src + self.dropout(_src))
        # positionwise feedforward
        _src = self.positionwise_feedforward(src)
        src = self.ff_layer_norm(src + self.dropout(_src))
        return src


class Encoder(nn.Module):
    def __init__(self, input_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, device, max_length=100):
        super().__init__()
        self.device = device
        self.tok_embedding = nn.Embedding(input_dim, hid_dim)
        self.pos_embedding = nn.Embedding(max_length, hid_dim)
        self.layers = nn.ModuleList([EncoderLayer(hid_dim, n_heads, pf_dim, dropout, device) for _ in range(n_layers)])
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.sqrt(torch.FloatTensor([hid_dim])).to(device)

    def forward(self, src, src_mask):
        batch_size = src.shape[0]
        src_len = src.shape[1]
        pos = torch.arange(0, src_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)
        src = self.dropout((self.tok_embedding(src) * self.scale) + self.pos_embedding(pos))
        for layer in self.layers:
            src = layer(src, src_mask)
        return src


class DecoderLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, pf_dim, dropout, device):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(hid_dim)
        self.enc_attn_layer_norm = nn.LayerNorm(hid_dim)
        self.ff_layer_norm = nn.LayerNorm(hid_dim)
        self.self_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.encoder_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.positionwise_feedforward = PositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, trg, enc_src, trg_mask, src_mask):
        _trg, _ = self.self_attention(trg, trg, trg, trg_mask)
        trg = self.self_attn_layer_norm(trg + self.dropout(_trg))
        # encoder attention
        _trg, attention = self.encoder_attention(trg, enc_src, enc_src, src_mask)
        trg = self.enc_attn_layer_norm(trg + self.dropout(_trg))
        _trg = self.positionwise_feedforward(trg)
        trg = self.ff_layer_norm(trg + self.dropout(_trg))
        return trg, attention


class Decoder(nn.Module):
    def __init__(self, output_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, device, max_length=100):
        super().__init__()
        self.device = device
        self.tok_embedding = nn.Embedding(output_dim, hid_dim)
        self.pos_embedding = nn.Embedding(max_length, hid_dim)
        self.layers = nn.ModuleList([DecoderLayer(hid_dim, n_heads, pf_dim, dropout, device) for _ in range(n_layers)])
        self.fc_out = nn.Linear(hid_dim, output_dim)
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.sqrt(torch.FloatTensor([hid_dim])).to(device)

    def forward(self, trg, enc_src, trg_mask, src_mask):
        batch_size = trg.shape[0]
        trg_len = trg.shape[1]
        pos = torch.arange(0, trg_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)
        trg = self.dropout((self.tok_embedding(trg) * self.scale) + self.pos_embedding(pos))
        for layer in self.layers:
            trg, attention = layer(trg, enc_src, trg_mask, src_mask)
        output = self.fc_out(trg)
        return output, attention


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, src_pad_idx, trg_pad_idx, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_pad_idx = src_pad_idx
        self.trg_pad_idx = trg_pad_idx
        self.device = device

    def make_src_mask(self, src):
        # src = [batch size, src len]
        src_mask = (src != self.src_pad_idx).unsqueeze(1).unsqueeze(2)
        # src_mask = [batch size, 1, 1, src len]
        return src_mask

    def make_trg_mask(self, trg):
        trg_pad_mask = (trg != self.trg_pad_idx).unsqueeze(1).unsqueeze(2)
        trg_len = trg.shape[1]
        trg_sub_mask = torch.tril(torch.ones((trg_len, trg_len), device=self.device)).bool()
        # trg_sub_mask = [trg len, trg len]
        trg_mask = trg_pad_mask & trg_sub_mask
        # trg_mask = [batch size, 1, trg len, trg len]
        return trg_mask

    def forward(self, src, trg):
        src_mask = self.make_src_mask(src)
        trg_mask = self.make_trg_mask(trg)
        enc_src = self.encoder(src, src_mask)
        output, attention = self.decoder(trg, enc_src, trg_mask, src_mask)
        # output = [batch size, trg len, output dim]
        return output, attention


def initialize_weights(m):
    if hasattr(m, "weight") and m.weight.dim() > 1:
        nn.init.xavier_uniform_(m.weight.data)


def build():
    torch.manual_seed(0)
    if MODEL == "conv":
        enc = ConvEncoder(SRC_VOCAB, EMB_DIM, HID_DIM, ENC_LAYERS, ENC_KERNEL_SIZE, DROPOUT, device)
        dec = ConvDecoder(TRG_VOCAB, EMB_DIM, HID_DIM, DEC_LAYERS, DEC_KERNEL_SIZE, DROPOUT, PAD_IDX, device)
        return ConvSeq2Seq(enc, dec).to(device)
    enc = Encoder(SRC_VOCAB, HID_DIM, ENC_LAYERS, N_HEADS, PF_DIM, DROPOUT, device)
    dec = Decoder(TRG_VOCAB, HID_DIM, DEC_LAYERS, N_HEADS, PF_DIM, DROPOUT, device)
    model = Seq2Seq(enc, dec, PAD_IDX, PAD_IDX, device).to(device)
    model.apply(initialize_weights)
    return model


def batches(seed):
    """Batch-first ``src``/``trg`` with <sos>/<eos> and padding (``batch_first = True`` fields)."""
    rng = np.random.RandomState(seed)
    for _ in range(6):
        lengths = rng.randint(2, 6, BATCH_SIZE)
        src = np.full((BATCH_SIZE, max(lengths) + 2), PAD_IDX)
        trg = np.full((BATCH_SIZE, max(lengths) + 2), PAD_IDX)
        for b, length in enumerate(lengths):
            tokens = rng.randint(4, SRC_VOCAB, length)
            src[b, : length + 2] = [SOS_IDX, *tokens, EOS_IDX]
            trg[b, : length + 2] = [SOS_IDX, *(tokens[::-1] + 1), EOS_IDX]
        yield torch.tensor(src).to(device), torch.tensor(trg).to(device)


def translate_sentence(src_indexes, model, device, max_len=8):
    model.eval()
    src_tensor = torch.LongTensor(src_indexes).unsqueeze(0).to(device)
    with torch.no_grad():
        if MODEL == "conv":
            encoder_conved, encoder_combined = model.encoder(src_tensor)
        else:
            src_mask = model.make_src_mask(src_tensor)
            enc_src = model.encoder(src_tensor, src_mask)
    trg_indexes = [SOS_IDX]
    for i in range(max_len):  # noqa: B007
        trg_tensor = torch.LongTensor(trg_indexes).unsqueeze(0).to(device)
        with torch.no_grad():
            if MODEL == "conv":
                output, attention = model.decoder(trg_tensor, encoder_conved, encoder_combined)
            else:
                trg_mask = model.make_trg_mask(trg_tensor)
                output, attention = model.decoder(trg_tensor, enc_src, trg_mask, src_mask)
        pred_token = output.argmax(2)[:, -1].item()
        trg_indexes.append(pred_token)
        if pred_token == EOS_IDX:
            break
    return trg_indexes[1:], attention


def train(model, steps=3):
    optimizer = optim.Adam(model.parameters(), lr=0.0005 * 10)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    record = {"losses": []}
    model.train()
    for i, (src, trg) in enumerate(batches(0)):
        if i == steps:
            break
        optimizer.zero_grad()
        output, _ = model(src, trg[:, :-1])
        # output = [batch size, trg len - 1, output dim]
        # trg = [batch size, trg len]
        output_dim = output.shape[-1]
        output = output.contiguous().view(-1, output_dim)
        trg = trg[:, 1:].contiguous().view(-1)
        loss = criterion(output, trg)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        optimizer.step()
        record["losses"].append(loss.item())
    translation, attention = translate_sentence([SOS_IDX, 5, 6, 7, EOS_IDX], model, device)
    record["translation"] = translation
    record["attention"] = attention.sum(-1).tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
