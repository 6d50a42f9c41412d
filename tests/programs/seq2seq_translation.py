"""The official tutorial "NLP From Scratch: Translation with a Sequence to Sequence Network and Attention"
(intermediate_source/seq2seq_translation_tutorial.py, its batched version), at a tiny size on made-up
sentence pairs. ``ATTENTION`` picks the AttnDecoderRNN (True) or the plain DecoderRNN.

Its idioms: a ``Lang`` with ``word2index``, ``word2count``, ``index2word = {0: "SOS", 1: "EOS"}``; ids written into
``np.zeros((n, MAX_LENGTH), dtype=np.int32)`` by ``input_ids[idx, :len(inp_ids)] = inp_ids`` and made a
``TensorDataset(torch.LongTensor(input_ids).to(device), ...)`` loaded through a ``RandomSampler``; ``EncoderRNN``
(``nn.GRU(batch_first=True)`` over ``self.dropout(self.embedding(input))``); the decoders' loop from
``torch.empty(batch_size, 1, dtype=torch.long, device=device).fill_(SOS_token)``, teacher forcing by
``decoder_input = target_tensor[:, i].unsqueeze(1)`` or greedy ``_, topi = decoder_output.topk(1)`` and
``topi.squeeze(-1).detach()``, ``torch.cat(decoder_outputs, dim=1)`` and ``F.log_softmax(..., dim=-1)``; Bahdanau
attention (``self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))``, ``scores.squeeze(2).unsqueeze(1)``,
``torch.bmm(weights, keys)``) with ``query = hidden.permute(1, 0, 2)`` and ``torch.cat((embedded, context),
dim=2)``; two Adam optimizers and ``nn.NLLLoss()`` on ``decoder_outputs.view(-1, decoder_outputs.size(-1))``
against ``target_tensor.view(-1)``; ``total_loss / len(dataloader)``; ``evaluate`` under ``torch.no_grad()``
with ``torch.tensor(indexes, dtype=torch.long, device=device).view(1, -1)``, ``decoded_ids = topi.squeeze()`` and
``for idx in decoded_ids: if idx.item() == EOS_token``.
"""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, optim, torch

DROPOUT = 0.1
SHUFFLE = True
ATTENTION = True
device = "cpu"
SOS_token = 0
EOS_token = 1
MAX_LENGTH = 6
hidden_size = 16
batch_size = 4

pairs = [
    ["je suis froid", "i am cold"],
    ["il est grand", "he is tall"],
    ["elle est petite", "she is small"],
    ["je suis grand", "i am tall"],
    ["il est froid", "he is cold"],
    ["elle est grande", "she is tall"],
    ["nous sommes petits", "we are small"],
    ["je suis petit", "i am small"],
]


class Lang:
    def __init__(self, name):
        self.name = name
        self.word2index = {}
        self.word2count = {}
        self.index2word = {0: "SOS", 1: "EOS"}
        self.n_words = 2  # Count SOS and EOS

    def addSentence(self, sentence):
        for word in sentence.split(" "):
            self.addWord(word)

    def addWord(self, word):
        if word not in self.word2index:
            self.word2index[word] = self.n_words
            self.word2count[word] = 1
            self.index2word[self.n_words] = word
            self.n_words += 1
        else:
            self.word2count[word] += 1


input_lang, output_lang = Lang("fra"), Lang("eng")
for pair in pairs:
    input_lang.addSentence(pair[0])
    output_lang.addSentence(pair[1])


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super().__init__()
        self.hidden_size = hidden_size

        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class DecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long, device=device).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden = self.forward_step(decoder_input, decoder_hidden)
            decoder_outputs.append(decoder_output)

            if target_tensor is not None:
                # Teacher forcing: Feed the target as the next input
                decoder_input = target_tensor[:, i].unsqueeze(1)  # Teacher forcing
            else:
                # Without teacher forcing: use its own predictions as the next input
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()  # detach from history as input

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        return decoder_outputs, decoder_hidden, None  # We return `None` for consistency in the training loop

    def forward_step(self, input, hidden):
        output = self.embedding(input)
        output = F.relu(output)
        output, hidden = self.gru(output, hidden)
        output = self.out(output)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)

        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)

        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long, device=device).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs
            )
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)

            if target_tensor is not None:
                # Teacher forcing: Feed the target as the next input
                decoder_input = target_tensor[:, i].unsqueeze(1)  # Teacher forcing
            else:
                # Without teacher forcing: use its own predictions as the next input
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()  # detach from history as input

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)

        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))

        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)

        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)

        return output, hidden, attn_weights


class Seq2Seq(nn.Module):
    """Holds the tutorial's two modules, so that one state_dict carries both."""

    def __init__(self):
        super().__init__()
        self.encoder = EncoderRNN(input_lang.n_words, hidden_size, dropout_p=DROPOUT).to(device)
        if ATTENTION:
            self.decoder = AttnDecoderRNN(hidden_size, output_lang.n_words, dropout_p=DROPOUT).to(device)
        else:
            self.decoder = DecoderRNN(hidden_size, output_lang.n_words).to(device)


def build():
    torch.manual_seed(0)
    return Seq2Seq()


def indexesFromSentence(lang, sentence):
    return [lang.word2index[word] for word in sentence.split(" ")]


def tensorFromSentence(lang, sentence):
    indexes = indexesFromSentence(lang, sentence)
    indexes.append(EOS_token)
    return torch.tensor(indexes, dtype=torch.long, device=device).view(1, -1)


def get_dataloader(batch_size):
    n = len(pairs)
    input_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)
    target_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)

    for idx, (inp, tgt) in enumerate(pairs):
        inp_ids = indexesFromSentence(input_lang, inp)
        tgt_ids = indexesFromSentence(output_lang, tgt)
        inp_ids.append(EOS_token)
        tgt_ids.append(EOS_token)
        input_ids[idx, : len(inp_ids)] = inp_ids
        target_ids[idx, : len(tgt_ids)] = tgt_ids

    train_data = TensorDataset(torch.LongTensor(input_ids).to(device), torch.LongTensor(target_ids).to(device))

    if SHUFFLE:
        train_sampler = torch.utils.data.RandomSampler(train_data)
    else:
        train_sampler = torch.utils.data.SequentialSampler(train_data)
    train_dataloader = DataLoader(train_data, sampler=train_sampler, batch_size=batch_size)
    return input_lang, output_lang, train_dataloader


def train_epoch(dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion, losses):
    total_loss = 0
    for data in dataloader:
        input_tensor, target_tensor = data

        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)

        loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
        loss.backward()

        encoder_optimizer.step()
        decoder_optimizer.step()

        total_loss += loss.item()
        losses.append(loss.item())

    return total_loss / len(dataloader)


def evaluate(encoder, decoder, sentence, input_lang, output_lang):
    with torch.no_grad():
        input_tensor = tensorFromSentence(input_lang, sentence)

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)

        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()

        decoded_words = []
        for idx in decoded_ids:
            if idx.item() == EOS_token:
                decoded_words.append("<EOS>")
                break
            decoded_words.append(output_lang.index2word[idx.item()])
    return decoded_words, decoder_outputs, decoder_attn


def train(model, steps=2):
    encoder, decoder = model.encoder, model.decoder
    input_lang, output_lang, train_dataloader = get_dataloader(batch_size)
    learning_rate = 0.01
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=learning_rate)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=learning_rate)
    criterion = nn.NLLLoss()

    losses, epoch_losses = [], []
    while len(losses) < steps:
        epoch_losses.append(
            train_epoch(train_dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion, losses)
        )
    losses = losses[:steps]

    encoder.eval()
    decoder.eval()
    output_words, decoder_outputs, attentions = evaluate(encoder, decoder, pairs[0][0], input_lang, output_lang)
    result = {
        "losses": losses,
        "epoch_losses": epoch_losses,
        "translation": " ".join(output_words),
        "log_probs": decoder_outputs[0, :2].tolist(),
    }
    if attentions is not None:
        result["attentions"] = attentions[0].tolist()
    return result


if __name__ == "__main__":
    print(train(build(), steps=100)["translation"])
