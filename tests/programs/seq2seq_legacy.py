"""The 2017 "Translation with a Sequence to Sequence Network and Attention" tutorial (practical-pytorch),
one sentence pair a step, on a synthetic reversal task.

Its idioms: ``use_cuda = torch.cuda.is_available()`` and ``result.cuda() if use_cuda else result``;
``Variable(torch.LongTensor(indexes).view(-1, 1))``; ``initHidden`` returning ``Variable(torch.zeros(1,
1, hidden_size))``; ``embedded = self.embedding(input).view(1, 1, -1)``; attention weights by
``F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)))`` without ``dim`` (PyTorch's implicit
choice, dim 1, with its warning) and ``torch.bmm(attn_weights.unsqueeze(0),
encoder_outputs.unsqueeze(0))``; encoder outputs gathered in ``Variable(torch.zeros(max_length,
hidden_size))``; teacher forcing by ``random.random() < teacher_forcing_ratio`` under ``random.seed``;
greedy decoding by ``topv, topi = decoder_output.data.topk(1)`` and ``ni = topi[0][0]`` then
``Variable(torch.LongTensor([[ni]]))``; ``torch.nn.utils.clip_grad_norm`` (deprecated, with its
warning); and ``loss.data.item() / target_length``."""

# ruff: noqa: UP008, UP031, UP032, B007  (the old repositories' spelling is the point: super(Net, self), % and .format)

from __future__ import annotations

import random
import warnings

import numpy as np
from shim import F, nn, optim, torch

Variable = torch.autograd.Variable  # from torch.autograd import Variable

use_cuda = torch.cuda.is_available()
SOS_token, EOS_token = 0, 1
n_words, hidden_size, MAX_LENGTH = 8, 12, 6
teacher_forcing_ratio = 0.5


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, n_layers=1):
        super(EncoderRNN, self).__init__()
        self.n_layers = n_layers
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)

    def forward(self, input, hidden):
        embedded = self.embedding(input).view(1, 1, -1)
        output = embedded
        for i in range(self.n_layers):
            output, hidden = self.gru(output, hidden)
        return output, hidden

    def initHidden(self):
        result = Variable(torch.zeros(1, 1, self.hidden_size))
        if use_cuda:
            return result.cuda()
        else:
            return result


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, n_layers=1, dropout_p=0.1, max_length=MAX_LENGTH):
        super(AttnDecoderRNN, self).__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.n_layers = n_layers
        self.dropout_p = dropout_p
        self.max_length = max_length

        self.embedding = nn.Embedding(self.output_size, self.hidden_size)
        self.attn = nn.Linear(self.hidden_size * 2, self.max_length)
        self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
        self.dropout = nn.Dropout(self.dropout_p)
        self.gru = nn.GRU(self.hidden_size, self.hidden_size)
        self.out = nn.Linear(self.hidden_size, self.output_size)

    def forward(self, input, hidden, encoder_output, encoder_outputs):
        embedded = self.embedding(input).view(1, 1, -1)
        embedded = self.dropout(embedded)

        attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)))
        attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))

        output = torch.cat((embedded[0], attn_applied[0]), 1)
        output = self.attn_combine(output).unsqueeze(0)

        for i in range(self.n_layers):
            output = F.relu(output)
            output, hidden = self.gru(output, hidden)

        output = F.log_softmax(self.out(output[0]))
        return output, hidden, attn_weights


class Seq2Seq(nn.Module):
    def __init__(self):
        super(Seq2Seq, self).__init__()
        self.encoder = EncoderRNN(n_words, hidden_size)
        self.decoder = AttnDecoderRNN(hidden_size, n_words, dropout_p=DROPOUT)


DROPOUT = 0.1


def build():
    torch.manual_seed(3)
    return Seq2Seq()


def variableFromSentence(indexes):
    indexes = list(indexes) + [EOS_token]
    result = Variable(torch.LongTensor(indexes).view(-1, 1))
    if use_cuda:
        return result.cuda()
    else:
        return result


def train_pair(input_variable, target_variable, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion):
    encoder_hidden = encoder.initHidden()

    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()

    input_length = input_variable.size()[0]
    target_length = target_variable.size()[0]

    encoder_outputs = Variable(torch.zeros(MAX_LENGTH, encoder.hidden_size))
    encoder_outputs = encoder_outputs.cuda() if use_cuda else encoder_outputs

    loss = 0

    for ei in range(input_length):
        encoder_output, encoder_hidden = encoder(input_variable[ei], encoder_hidden)
        encoder_outputs[ei] = encoder_output[0][0]

    decoder_input = Variable(torch.LongTensor([[SOS_token]]))
    decoder_input = decoder_input.cuda() if use_cuda else decoder_input

    decoder_hidden = encoder_hidden

    use_teacher_forcing = True if random.random() < teacher_forcing_ratio else False

    if use_teacher_forcing:
        # Teacher forcing: Feed the target as the next input
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(
                decoder_input, decoder_hidden, encoder_output, encoder_outputs
            )
            loss += criterion(decoder_output, target_variable[di])
            decoder_input = target_variable[di]  # Teacher forcing
    else:
        # Without teacher forcing: use its own predictions as the next input
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(
                decoder_input, decoder_hidden, encoder_output, encoder_outputs
            )
            topv, topi = decoder_output.data.topk(1)
            ni = topi[0][0]

            decoder_input = Variable(torch.LongTensor([[ni]]))
            decoder_input = decoder_input.cuda() if use_cuda else decoder_input

            loss += criterion(decoder_output, target_variable[di])
            if ni == EOS_token:
                break

    loss.backward()
    torch.nn.utils.clip_grad_norm(encoder.parameters(), 5.0)
    torch.nn.utils.clip_grad_norm(decoder.parameters(), 5.0)

    encoder_optimizer.step()
    decoder_optimizer.step()

    return loss.data.item() / target_length, use_teacher_forcing


def evaluate(encoder, decoder, sentence, max_length=MAX_LENGTH):
    input_variable = variableFromSentence(sentence)
    input_length = input_variable.size()[0]
    encoder_hidden = encoder.initHidden()
    encoder_outputs = Variable(torch.zeros(max_length, encoder.hidden_size))
    encoder_outputs = encoder_outputs.cuda() if use_cuda else encoder_outputs
    for ei in range(input_length):
        encoder_output, encoder_hidden = encoder(input_variable[ei], encoder_hidden)
        encoder_outputs[ei] = encoder_outputs[ei] + encoder_output[0][0]
    decoder_input = Variable(torch.LongTensor([[SOS_token]]))
    decoder_input = decoder_input.cuda() if use_cuda else decoder_input
    decoder_hidden = encoder_hidden
    decoded_words = []
    decoder_attentions = torch.zeros(max_length, max_length)
    for di in range(max_length):
        decoder_output, decoder_hidden, decoder_attention = decoder(
            decoder_input, decoder_hidden, encoder_output, encoder_outputs
        )
        decoder_attentions[di] = decoder_attention.data.cpu()
        topv, topi = decoder_output.data.topk(1)
        ni = topi[0][0]
        if ni == EOS_token:
            decoded_words.append("<EOS>")
            break
        else:
            decoded_words.append(int(ni))
        decoder_input = Variable(torch.LongTensor([[ni]]))
        decoder_input = decoder_input.cuda() if use_cuda else decoder_input
    return decoded_words, decoder_attentions[: di + 1]


def train(model, steps=3):
    random.seed(0)
    np.random.seed(0)
    encoder, decoder = model.encoder, model.decoder
    if use_cuda:
        encoder, decoder = encoder.cuda(), decoder.cuda()
    encoder_optimizer = optim.SGD(encoder.parameters(), lr=0.05)
    decoder_optimizer = optim.SGD(decoder.parameters(), lr=0.05)
    criterion = nn.NLLLoss()
    pairs = [np.random.randint(2, n_words, size=np.random.randint(2, 5)).tolist() for _ in range(steps)]
    record = {"losses": [], "forced": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for sentence in pairs:
            loss, forced = train_pair(
                variableFromSentence(sentence),
                variableFromSentence(sentence[::-1]),
                encoder,
                decoder,
                encoder_optimizer,
                decoder_optimizer,
                criterion,
            )
            record["losses"].append(loss)
            record["forced"].append(forced)
    record["warnings"] = sorted({str(w.message).replace("vkml", "torch")[:50] for w in caught})
    encoder.eval()
    decoder.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        words, attentions = evaluate(encoder, decoder, pairs[0])
    record["decoded"] = [w if isinstance(w, int) else -1 for w in words]
    record["attention"] = attentions.numpy().tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
