"""bentrevett/pytorch-seq2seq's recurrent notebooks (1: LSTM encoder-decoder, 2: GRU with the context at every
step, 3: attention over a bidirectional GRU, 4: packed padded sequences with a masked attention), at tiny sizes
on a synthetic "translation" (reverse the source and shift its tokens). ``MODEL`` picks one.

Idioms: ``[src len, batch size]`` tensors; the encoder's ``outputs, (hidden, cell) = self.rnn(embedded)``;
``input.unsqueeze(0)`` in the decoder and ``self.fc_out(output.squeeze(0))``; ``Seq2Seq`` asserting
``encoder.hid_dim == decoder.hid_dim``, ``outputs = torch.zeros(trg_len, batch_size,
trg_vocab_size).to(self.device)`` filled by ``outputs[t] = output``, ``teacher_force = random.random() <
teacher_forcing_ratio``, ``top1 = output.argmax(1)``; ``init_weights`` over ``m.named_parameters()`` by
``nn.init.uniform_(param.data, -0.08, 0.08)`` (notebook 1), ``nn.init.normal_(param.data, mean=0, std=0.01)``
(2) or by name ``'weight' in name`` with ``nn.init.constant_(param.data, 0)`` (3, 4), applied with
``model.apply``; ``count_parameters`` by ``p.numel()`` ``if p.requires_grad``; ``nn.CrossEntropyLoss(ignore_index
= TRG_PAD_IDX)`` over ``output[1:].view(-1, output_dim)`` and ``trg[1:].view(-1)``;
``torch.nn.utils.clip_grad_norm_(model.parameters(), clip)``; ``evaluate`` with ``model(src, trg, 0)`` under
``torch.no_grad()``; ``math.exp(train_loss):7.3f`` perplexity lines; ``best_valid_loss = float('inf')`` and
``torch.save(model.state_dict(), 'tut1-model.pt')`` then ``model.load_state_dict(torch.load(...))``; notebook 2's
``torch.cat((embedded, context), dim = 2)`` and ``torch.cat((embedded.squeeze(0), hidden.squeeze(0),
context.squeeze(0)), dim = 1)``; notebook 3's ``torch.tanh(self.fc(torch.cat((hidden[-2,:,:], hidden[-1,:,:]),
dim = 1)))``, ``hidden.unsqueeze(1).repeat(1, src_len, 1)``, ``encoder_outputs.permute(1, 0, 2)``,
``self.v(energy).squeeze(2)``, ``torch.bmm(a, encoder_outputs)`` and ``assert (output == hidden).all()``;
notebook 4's ``nn.utils.rnn.pack_padded_sequence(embedded, src_len.to('cpu'))``, ``pad_packed_sequence``,
``create_mask`` by ``(src != self.src_pad_idx).permute(1, 0)``, ``attention.masked_fill(mask == 0, -1e10)`` and
``translate_sentence`` (``torch.LongTensor(src_indexes).unsqueeze(1)``, ``attentions = torch.zeros(max_len, 1,
len(src_indexes))`` filled by ``attentions[i] = attention``, ``output.argmax(1).item()``).
"""

from __future__ import annotations

import math
import os
import random
import tempfile

import numpy as np
from shim import F, nn, optim, torch

MODEL = "lstm"  # or "gru_context", "attention", "packed"
DROPOUT = 0.5
SRC_VOCAB = 12
TRG_VOCAB = 13
PAD_IDX, SOS_IDX, EOS_IDX = 1, 2, 3
BATCH_SIZE = 4
ENC_EMB_DIM = DEC_EMB_DIM = 6
HID_DIM = 8
N_LAYERS = 2
CLIP = 1
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


# ------------------------------------------------------------------------------------ 1: LSTM seq2seq
class Encoder(nn.Module):
    def __init__(self, input_dim, emb_dim, hid_dim, n_layers, dropout):
        super().__init__()
        self.hid_dim = hid_dim
        self.n_layers = n_layers
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.LSTM(emb_dim, hid_dim, n_layers, dropout=dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        # src = [src len, batch size]
        embedded = self.dropout(self.embedding(src))
        # embedded = [src len, batch size, emb dim]
        outputs, (hidden, cell) = self.rnn(embedded)
        # outputs = [src len, batch size, hid dim * n directions]
        # hidden = [n layers * n directions, batch size, hid dim]
        # outputs are always from the top hidden layer
        return hidden, cell


class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, hid_dim, n_layers, dropout):
        super().__init__()
        self.output_dim = output_dim
        self.hid_dim = hid_dim
        self.n_layers = n_layers
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.LSTM(emb_dim, hid_dim, n_layers, dropout=dropout)
        self.fc_out = nn.Linear(hid_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, cell):
        # input = [batch size]
        input = input.unsqueeze(0)
        # input = [1, batch size]
        embedded = self.dropout(self.embedding(input))
        output, (hidden, cell) = self.rnn(embedded, (hidden, cell))
        # seq len and n directions will always be 1 in the decoder, therefore:
        # output = [1, batch size, hid dim]
        prediction = self.fc_out(output.squeeze(0))
        # prediction = [batch size, output dim]
        return prediction, hidden, cell


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.device = device
        assert encoder.hid_dim == decoder.hid_dim, "Hidden dimensions of encoder and decoder must be equal!"
        assert encoder.n_layers == decoder.n_layers, "Encoder and decoder must have equal number of layers!"

    def forward(self, src, trg, teacher_forcing_ratio=0.5):
        # teacher_forcing_ratio is probability to use teacher forcing
        # e.g. if teacher_forcing_ratio is 0.75 we use ground-truth inputs 75% of the time
        batch_size = trg.shape[1]
        trg_len = trg.shape[0]
        trg_vocab_size = self.decoder.output_dim
        # tensor to store decoder outputs
        outputs = torch.zeros(trg_len, batch_size, trg_vocab_size).to(self.device)
        # last hidden state of the encoder is used as the initial hidden state of the decoder
        hidden, cell = self.encoder(src)
        # first input to the decoder is the <sos> tokens
        input = trg[0, :]
        for t in range(1, trg_len):
            # insert input token embedding, previous hidden and previous cell states
            # receive output tensor (predictions) and new hidden and cell states
            output, hidden, cell = self.decoder(input, hidden, cell)
            # place predictions in a tensor holding predictions for each token
            outputs[t] = output
            # decide if we are going to use teacher forcing or not
            teacher_force = random.random() < teacher_forcing_ratio
            # get the highest predicted token from our predictions
            top1 = output.argmax(1)
            # if teacher forcing, use actual next token as next input
            # if not, use predicted token
            input = trg[t] if teacher_force else top1
        return outputs


# -------------------------------------------------------------------- 2: GRU with the context vector
class ContextEncoder(nn.Module):
    def __init__(self, input_dim, emb_dim, hid_dim, dropout):
        super().__init__()
        self.hid_dim = hid_dim
        self.embedding = nn.Embedding(input_dim, emb_dim)  # no dropout as only one layer!
        self.rnn = nn.GRU(emb_dim, hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        embedded = self.dropout(self.embedding(src))
        outputs, hidden = self.rnn(embedded)  # no cell state!
        # hidden = [n layers * n directions, batch size, hid dim]
        return hidden


class ContextDecoder(nn.Module):
    def __init__(self, output_dim, emb_dim, hid_dim, dropout):
        super().__init__()
        self.hid_dim = hid_dim
        self.output_dim = output_dim
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim + hid_dim, hid_dim)
        self.fc_out = nn.Linear(emb_dim + hid_dim * 2, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, context):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        emb_con = torch.cat((embedded, context), dim=2)
        # emb_con = [1, batch size, emb dim + hid dim]
        output, hidden = self.rnn(emb_con, hidden)
        output = torch.cat((embedded.squeeze(0), hidden.squeeze(0), context.squeeze(0)), dim=1)
        # output = [batch size, emb dim + hid dim * 2]
        prediction = self.fc_out(output)
        return prediction, hidden


class ContextSeq2Seq(nn.Module):
    def __init__(self, encoder, decoder, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.device = device
        assert encoder.hid_dim == decoder.hid_dim, "Hidden dimensions of encoder and decoder must be equal!"

    def forward(self, src, trg, teacher_forcing_ratio=0.5):
        batch_size = trg.shape[1]
        trg_len = trg.shape[0]
        trg_vocab_size = self.decoder.output_dim
        outputs = torch.zeros(trg_len, batch_size, trg_vocab_size).to(self.device)
        # last hidden state of the encoder is the context
        context = self.encoder(src)
        # context also used as the initial hidden state of the decoder
        hidden = context
        input = trg[0, :]
        for t in range(1, trg_len):
            output, hidden = self.decoder(input, hidden, context)
            outputs[t] = output
            teacher_force = random.random() < teacher_forcing_ratio
            top1 = output.argmax(1)
            input = trg[t] if teacher_force else top1
        return outputs


# ------------------------------------------------------------------ 3 and 4: attention (packed in 4)
class AttnEncoder(nn.Module):
    def __init__(self, input_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, packed=False):
        super().__init__()
        self.packed = packed
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim, enc_hid_dim, bidirectional=True)
        self.fc = nn.Linear(enc_hid_dim * 2, dec_hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_len=None):
        # src = [src len, batch size]
        embedded = self.dropout(self.embedding(src))
        if self.packed:
            # need to explicitly put lengths on cpu!
            packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, src_len.to("cpu"))
            packed_outputs, hidden = self.rnn(packed_embedded)
            # packed_outputs is a packed sequence containing all hidden states
            # hidden is now from the final non-padded element in the batch
            outputs, _ = nn.utils.rnn.pad_packed_sequence(packed_outputs)
            # outputs is now a non-packed sequence, all hidden states obtained
            # when the input is a pad token are all zeros
        else:
            outputs, hidden = self.rnn(embedded)
        # hidden is stacked [forward_1, backward_1, forward_2, backward_2, ...]
        # outputs are always from the last layer
        # hidden [-2, :, : ] is the last of the forwards RNN
        # hidden [-1, :, : ] is the last of the backwards RNN
        # initial decoder hidden is final hidden state of the forwards and backwards
        # encoder RNNs fed through a linear layer
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
        # outputs = [src len, batch size, enc hid dim * 2]
        # hidden = [batch size, dec hid dim]
        return outputs, hidden


class Attention(nn.Module):
    def __init__(self, enc_hid_dim, dec_hid_dim):
        super().__init__()
        self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
        self.v = nn.Linear(dec_hid_dim, 1, bias=False)

    def forward(self, hidden, encoder_outputs, mask=None):
        # hidden = [batch size, dec hid dim]
        # encoder_outputs = [src len, batch size, enc hid dim * 2]
        batch_size = encoder_outputs.shape[1]  # noqa: F841
        src_len = encoder_outputs.shape[0]
        # repeat decoder hidden state src_len times
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        # hidden = [batch size, src len, dec hid dim]
        # encoder_outputs = [batch size, src len, enc hid dim * 2]
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        # energy = [batch size, src len, dec hid dim]
        attention = self.v(energy).squeeze(2)
        # attention= [batch size, src len]
        if mask is not None:
            attention = attention.masked_fill(mask == 0, -1e10)
        return F.softmax(attention, dim=1)


class AttnDecoder(nn.Module):
    def __init__(self, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, attention):
        super().__init__()
        self.output_dim = output_dim
        self.attention = attention
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.GRU((enc_hid_dim * 2) + emb_dim, dec_hid_dim)
        self.fc_out = nn.Linear((enc_hid_dim * 2) + dec_hid_dim + emb_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, encoder_outputs, mask=None):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        a = self.attention(hidden, encoder_outputs, mask)
        # a = [batch size, src len]
        a = a.unsqueeze(1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        weighted = torch.bmm(a, encoder_outputs)
        # weighted = [batch size, 1, enc hid dim * 2]
        weighted = weighted.permute(1, 0, 2)
        rnn_input = torch.cat((embedded, weighted), dim=2)
        output, hidden = self.rnn(rnn_input, hidden.unsqueeze(0))
        # seq len, n layers and n directions will always be 1 in this decoder, therefore:
        # output = [1, batch size, dec hid dim]
        # hidden = [1, batch size, dec hid dim]
        # this also means that output == hidden
        assert (output == hidden).all()
        embedded = embedded.squeeze(0)
        output = output.squeeze(0)
        weighted = weighted.squeeze(0)
        prediction = self.fc_out(torch.cat((output, weighted, embedded), dim=1))
        # prediction = [batch size, output dim]
        return prediction, hidden.squeeze(0), a.squeeze(1)


class AttnSeq2Seq(nn.Module):
    def __init__(self, encoder, decoder, src_pad_idx, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_pad_idx = src_pad_idx
        self.device = device

    def create_mask(self, src):
        mask = (src != self.src_pad_idx).permute(1, 0)
        return mask

    def forward(self, src, src_len, trg, teacher_forcing_ratio=0.5):
        batch_size = src.shape[1]
        trg_len = trg.shape[0]
        trg_vocab_size = self.decoder.output_dim
        outputs = torch.zeros(trg_len, batch_size, trg_vocab_size).to(self.device)
        # encoder_outputs is all hidden states of the input sequence, back and forwards
        # hidden is the final forward and backward hidden states, passed through a linear layer
        encoder_outputs, hidden = self.encoder(src, src_len)
        input = trg[0, :]
        mask = self.create_mask(src) if self.encoder.packed else None
        # mask = [batch size, src len]
        for t in range(1, trg_len):
            # insert input token embedding, previous hidden state, all encoder hidden states
            #  and mask; receive output tensor (predictions) and new hidden state
            output, hidden, _ = self.decoder(input, hidden, encoder_outputs, mask)
            outputs[t] = output
            teacher_force = random.random() < teacher_forcing_ratio
            top1 = output.argmax(1)
            input = trg[t] if teacher_force else top1
        return outputs


# ---------------------------------------------------------------------------------------- the notebooks
def init_weights(m):
    if MODEL == "lstm":
        for name, param in m.named_parameters():  # noqa: B007
            nn.init.uniform_(param.data, -0.08, 0.08)
    elif MODEL == "gru_context":
        for name, param in m.named_parameters():  # noqa: B007
            nn.init.normal_(param.data, mean=0, std=0.01)
    else:
        for name, param in m.named_parameters():
            if "weight" in name:
                nn.init.normal_(param.data, mean=0, std=0.01)
            else:
                nn.init.constant_(param.data, 0)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def build():
    torch.manual_seed(0)
    if MODEL == "lstm":
        enc = Encoder(SRC_VOCAB, ENC_EMB_DIM, HID_DIM, N_LAYERS, DROPOUT)
        dec = Decoder(TRG_VOCAB, DEC_EMB_DIM, HID_DIM, N_LAYERS, DROPOUT)
        model = Seq2Seq(enc, dec, device).to(device)
    elif MODEL == "gru_context":
        enc = ContextEncoder(SRC_VOCAB, ENC_EMB_DIM, HID_DIM, DROPOUT)
        dec = ContextDecoder(TRG_VOCAB, DEC_EMB_DIM, HID_DIM, DROPOUT)
        model = ContextSeq2Seq(enc, dec, device).to(device)
    else:
        attn = Attention(HID_DIM, HID_DIM)
        enc = AttnEncoder(SRC_VOCAB, ENC_EMB_DIM, HID_DIM, HID_DIM, DROPOUT, packed=MODEL == "packed")
        dec = AttnDecoder(TRG_VOCAB, DEC_EMB_DIM, HID_DIM, HID_DIM, DROPOUT, attn)
        model = AttnSeq2Seq(enc, dec, PAD_IDX, device).to(device)
    model.apply(init_weights)
    return model


def batches(seed):
    """BucketIterator-like batches, sorted by source length within the batch as ``sort_within_batch=True`` does:
    ``src`` [src len, batch] with <sos>/<eos> and padding, ``src_len``, ``trg`` the reversed tokens + 1."""
    rng = np.random.RandomState(seed)
    for _ in range(6):
        lengths = sorted(rng.randint(2, 6, BATCH_SIZE), reverse=True)
        src = np.full((max(lengths) + 2, BATCH_SIZE), PAD_IDX)
        trg = np.full((max(lengths) + 2, BATCH_SIZE), PAD_IDX)
        for b, length in enumerate(lengths):
            tokens = rng.randint(4, SRC_VOCAB, length)
            src[: length + 2, b] = [SOS_IDX, *tokens, EOS_IDX]
            trg[: length + 2, b] = [SOS_IDX, *(tokens[::-1] + 1), EOS_IDX]
        yield (
            torch.tensor(src).to(device),
            torch.tensor([length + 2 for length in lengths]),
            torch.tensor(trg).to(device),
        )


def forward(model, src, src_len, trg, teacher_forcing_ratio=0.5):
    if MODEL in ("lstm", "gru_context"):
        return model(src, trg, teacher_forcing_ratio)
    return model(src, src_len, trg, teacher_forcing_ratio)


def train_epoch(model, iterator, optimizer, criterion, clip, steps):
    model.train()
    epoch_loss = 0
    losses = []
    for i, (src, src_len, trg) in enumerate(iterator):
        if i == steps:
            break
        optimizer.zero_grad()
        output = forward(model, src, src_len, trg)
        # trg = [trg len, batch size]
        # output = [trg len, batch size, output dim]
        output_dim = output.shape[-1]
        output = output[1:].view(-1, output_dim)
        trg = trg[1:].view(-1)
        # trg = [(trg len - 1) * batch size]
        # output = [(trg len - 1) * batch size, output dim]
        loss = criterion(output, trg)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        epoch_loss += loss.item()
        losses.append(loss.item())
    return epoch_loss / len(losses), losses


def evaluate(model, iterator, criterion):
    model.eval()
    epoch_loss = 0
    count = 0
    with torch.no_grad():
        for i, (src, src_len, trg) in enumerate(iterator):
            if i == 2:
                break
            output = forward(model, src, src_len, trg, 0)  # turn off teacher forcing
            output_dim = output.shape[-1]
            output = output[1:].view(-1, output_dim)
            trg = trg[1:].view(-1)
            loss = criterion(output, trg)
            epoch_loss += loss.item()
            count += 1
    return epoch_loss / count


def translate_sentence(src_indexes, model, device, max_len=8):
    model.eval()
    src_tensor = torch.LongTensor(src_indexes).unsqueeze(1).to(device)
    src_len = torch.LongTensor([len(src_indexes)])
    with torch.no_grad():
        encoder_outputs, hidden = model.encoder(src_tensor, src_len)
    mask = model.create_mask(src_tensor)
    trg_indexes = [SOS_IDX]
    attentions = torch.zeros(max_len, 1, len(src_indexes)).to(device)
    for i in range(max_len):
        trg_tensor = torch.LongTensor([trg_indexes[-1]]).to(device)
        with torch.no_grad():
            output, hidden, attention = model.decoder(trg_tensor, hidden, encoder_outputs, mask)
        attentions[i] = attention
        pred_token = output.argmax(1).item()
        trg_indexes.append(pred_token)
        if pred_token == EOS_IDX:
            break
    return trg_indexes[1:], attentions[: len(trg_indexes) - 1]


def train(model, steps=3):
    random.seed(0)  # the teacher forcing draws
    record = {"count": f"The model has {count_parameters(model):,} trainable parameters"}
    optimizer = optim.Adam(model.parameters())
    TRG_PAD_IDX = PAD_IDX
    criterion = nn.CrossEntropyLoss(ignore_index=TRG_PAD_IDX)
    best_valid_loss = float("inf")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "tut1-model.pt")
        train_loss, losses = train_epoch(model, batches(0), optimizer, criterion, CLIP, steps)
        valid_loss = evaluate(model, batches(1), criterion)
        if valid_loss < best_valid_loss:
            best_valid_loss = valid_loss
            torch.save(model.state_dict(), path)
        record["lines"] = [
            f"\tTrain Loss: {train_loss:.3f} | Train PPL: {math.exp(train_loss):7.3f}",
            f"\t Val. Loss: {valid_loss:.3f} |  Val. PPL: {math.exp(valid_loss):7.3f}",
        ]
        model.load_state_dict(torch.load(path))
    record["losses"] = losses
    record["valid_loss"] = valid_loss
    if MODEL == "packed":
        translation, attention = translate_sentence([SOS_IDX, 5, 6, 7, EOS_IDX], model, device)
        record["translation"] = translation
        record["attention"] = attention.tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
