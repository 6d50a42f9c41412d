"""A BERT masked-language-model pretraining step, written the way Hugging Face transformers'
``modeling_bert.py``, ``data/data_collator.py`` and ``run_mlm.py`` write it.

Idioms: ``DataCollatorForLanguageModeling.torch_mask_tokens`` (``torch.full(labels.shape, 0.15)``, the
``special_tokens_mask`` from the tokenizer's ``get_special_tokens_mask`` per row of ``labels.tolist()``
into ``torch.tensor(..., dtype=torch.bool)``, ``probability_matrix.masked_fill_``, ``torch.bernoulli(...)
.bool()``, ``labels[~masked_indices] = -100``, the 80/10/10 replacement with ``torch.randint(len(tokenizer),
labels.shape, dtype=torch.long)`` and boolean-mask assignment) after ``tokenizer.pad`` of a list of dicts (``pad_to_multiple_of``);
``BertEmbeddings`` with ``register_buffer("position_ids", torch.arange(n).expand((1, -1)),
persistent=False)`` and a zero ``token_type_ids`` buffer sliced and ``expand``-ed; the extended attention
mask ``(1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min`` (``get_extended_attention_mask``
over a ``dtype`` property); ``transpose_for_scores`` by ``x.size()[:-1] + (heads, size)``; the SDPA
self-attention (``ATTN = "sdpa"``) with the extended mask as its float ``attn_mask``;
``apply_chunking_to_forward`` of the feed-forward (``CHUNK``: ``tensor.chunk`` and ``torch.cat``);
``gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})`` as
``functools.partial(torch.utils.checkpoint.checkpoint, **kwargs)`` called on ``layer_module.__call__``;
the prediction head's decoder tied to the word embeddings with ``self.decoder.bias = self.bias``;
``_init_weights`` by ``module.weight.data.normal_``; ``CrossEntropyLoss()`` over the -100 labels;
AdamW with name-based decay groups and a linear warmup ``LambdaLR``; masked-token accuracy under
``torch.no_grad()``.
"""

from __future__ import annotations

import functools
import math

from shim import nn, optim, torch

ATTN = "eager"  # or "sdpa"
CHUNK = 0  # chunk_size_feed_forward: 0 runs the feed-forward whole
GRADIENT_CHECKPOINTING = True
PAD_TO_MULTIPLE_OF_8 = False  # run_mlm.py's choice under fp16: lets CHUNK split the sequence
DROPOUT = 0.1
VOCAB, HIDDEN, HEADS, LAYERS, INTERMEDIATE, MAX_POSITIONS = 30, 16, 2, 2, 32, 16
BATCH = 4


class ToyTokenizer:
    """The few methods of a ``PreTrainedTokenizer`` that the collator calls."""

    pad_token_id, cls_token_id, sep_token_id, mask_token_id = 0, 1, 2, 3
    mask_token = "[MASK]"
    all_special_ids = [0, 1, 2, 3]

    def __len__(self):
        return VOCAB

    def convert_tokens_to_ids(self, token):
        return {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3}[token]

    def get_special_tokens_mask(self, token_ids_0, already_has_special_tokens=False):
        return [1 if token in self.all_special_ids else 0 for token in token_ids_0]

    def pad(self, encoded_inputs, pad_to_multiple_of=None, return_tensors="pt"):
        max_length = max(len(e["input_ids"]) for e in encoded_inputs)
        if pad_to_multiple_of is not None and (max_length % pad_to_multiple_of != 0):
            max_length = ((max_length // pad_to_multiple_of) + 1) * pad_to_multiple_of
        batch = {"input_ids": [], "attention_mask": []}
        for example in encoded_inputs:
            difference = max_length - len(example["input_ids"])
            batch["input_ids"].append(example["input_ids"] + [self.pad_token_id] * difference)
            batch["attention_mask"].append([1] * len(example["input_ids"]) + [0] * difference)
        return {k: torch.tensor(v, dtype=torch.long) for k, v in batch.items()}


class DataCollatorForLanguageModeling:
    def __init__(self, tokenizer, mlm=True, mlm_probability=0.15, pad_to_multiple_of=None):
        self.tokenizer = tokenizer
        self.mlm = mlm
        self.mlm_probability = mlm_probability
        self.pad_to_multiple_of = pad_to_multiple_of

    def __call__(self, examples):
        batch = self.tokenizer.pad(examples, pad_to_multiple_of=self.pad_to_multiple_of, return_tensors="pt")
        special_tokens_mask = batch.pop("special_tokens_mask", None)
        batch["input_ids"], batch["labels"] = self.torch_mask_tokens(
            batch["input_ids"], special_tokens_mask=special_tokens_mask
        )
        return batch

    def torch_mask_tokens(self, inputs, special_tokens_mask=None):
        """
        Prepare masked tokens inputs/labels for masked language modeling: 80% MASK, 10% random, 10% original.
        """
        labels = inputs.clone()
        # We sample a few tokens in each sequence for MLM training (with probability `self.mlm_probability`)
        probability_matrix = torch.full(labels.shape, self.mlm_probability)
        if special_tokens_mask is None:
            special_tokens_mask = [
                self.tokenizer.get_special_tokens_mask(val, already_has_special_tokens=True) for val in labels.tolist()
            ]
            special_tokens_mask = torch.tensor(special_tokens_mask, dtype=torch.bool)
        else:
            special_tokens_mask = special_tokens_mask.bool()

        probability_matrix.masked_fill_(special_tokens_mask, value=0.0)
        masked_indices = torch.bernoulli(probability_matrix).bool()
        labels[~masked_indices] = -100  # We only compute loss on masked tokens

        # 80% of the time, we replace masked input tokens with tokenizer.mask_token ([MASK])
        indices_replaced = torch.bernoulli(torch.full(labels.shape, 0.8)).bool() & masked_indices
        inputs[indices_replaced] = self.tokenizer.convert_tokens_to_ids(self.tokenizer.mask_token)

        # 10% of the time, we replace masked input tokens with random word
        indices_random = torch.bernoulli(torch.full(labels.shape, 0.5)).bool() & masked_indices & ~indices_replaced
        random_words = torch.randint(len(self.tokenizer), labels.shape, dtype=torch.long)
        inputs[indices_random] = random_words[indices_random]

        # The rest of the time (10% of the time) we keep the masked input tokens unchanged
        return inputs, labels


class BertConfig:
    def __init__(self):
        self.vocab_size = VOCAB
        self.hidden_size = HIDDEN
        self.num_hidden_layers = LAYERS
        self.num_attention_heads = HEADS
        self.intermediate_size = INTERMEDIATE
        self.hidden_dropout_prob = self.attention_probs_dropout_prob = DROPOUT
        self.max_position_embeddings = MAX_POSITIONS
        self.type_vocab_size = 2
        self.initializer_range = 0.02
        self.layer_norm_eps = 1e-12
        self.pad_token_id = 0
        self.chunk_size_feed_forward = CHUNK
        self._attn_implementation = ATTN


def apply_chunking_to_forward(forward_fn, chunk_size, chunk_dim, *input_tensors):
    if chunk_size > 0:
        tensor_shape = input_tensors[0].shape[chunk_dim]
        if input_tensors[0].shape[chunk_dim] % chunk_size != 0:
            raise ValueError(f"The dimension to be chunked {tensor_shape} has to be a multiple of {chunk_size}")
        num_chunks = input_tensors[0].shape[chunk_dim] // chunk_size
        # chunk input tensor into tuples
        input_tensors_chunks = tuple(input_tensor.chunk(num_chunks, dim=chunk_dim) for input_tensor in input_tensors)
        # apply forward fn to every tuple
        output_chunks = tuple(forward_fn(*input_tensors_chunk) for input_tensors_chunk in zip(*input_tensors_chunks))
        # concatenate output at same dimension
        return torch.cat(output_chunks, dim=chunk_dim)
    return forward_fn(*input_tensors)


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.register_buffer(
            "position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)), persistent=False
        )
        self.register_buffer(
            "token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long), persistent=False
        )

    def forward(self, input_ids=None, token_type_ids=None, position_ids=None, past_key_values_length=0):
        input_shape = input_ids.size()
        seq_length = input_shape[1]
        if position_ids is None:
            position_ids = self.position_ids[:, past_key_values_length : seq_length + past_key_values_length]
        # Setting the token_type_ids to the registered buffer in constructor where it is all zeros
        if token_type_ids is None:
            if hasattr(self, "token_type_ids"):
                buffered_token_type_ids = self.token_type_ids[:, :seq_length]
                buffered_token_type_ids_expanded = buffered_token_type_ids.expand(input_shape[0], seq_length)
                token_type_ids = buffered_token_type_ids_expanded
            else:
                token_type_ids = torch.zeros(input_shape, dtype=torch.long, device=self.position_ids.device)
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        embeddings += position_embeddings
        embeddings = self.LayerNorm(embeddings)
        embeddings = self.dropout(embeddings)
        return embeddings


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None):
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)

        # Take the dot product between "query" and "key" to get the raw attention scores.
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            # Apply the attention mask is (precomputed for all layers in BertModel forward() function)
            attention_scores = attention_scores + attention_mask

        # Normalize the attention scores to probabilities.
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        # This is actually dropping out entire tokens to attend to, which might
        # seem a bit unusual, but is taken from the original Transformer paper.
        attention_probs = self.dropout(attention_probs)

        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(new_context_layer_shape)
        return (context_layer,)


class BertSdpaSelfAttention(BertSelfAttention):
    def __init__(self, config):
        super().__init__(config)
        self.dropout_prob = config.attention_probs_dropout_prob

    def forward(self, hidden_states, attention_mask=None):
        bsz, tgt_len, _ = hidden_states.size()
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attn_output = torch.nn.functional.scaled_dot_product_attention(
            query_layer,
            key_layer,
            value_layer,
            attn_mask=attention_mask,
            dropout_p=self.dropout_prob if self.training else 0.0,
            is_causal=False,
        )
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.all_head_size)
        return (attn_output,)


BERT_SELF_ATTENTION_CLASSES = {"eager": BertSelfAttention, "sdpa": BertSdpaSelfAttention}


class BertSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = BERT_SELF_ATTENTION_CLASSES[config._attn_implementation](config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states, attention_mask=None):
        self_outputs = self.self(hidden_states, attention_mask)
        attention_output = self.output(self_outputs[0], hidden_states)
        outputs = (attention_output,) + self_outputs[1:]  # add attentions if we output them
        return outputs


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = nn.GELU()

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.intermediate_act_fn(hidden_states)
        return hidden_states


class BertOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.chunk_size_feed_forward = config.chunk_size_feed_forward
        self.seq_len_dim = 1
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, attention_mask=None):
        self_attention_outputs = self.attention(hidden_states, attention_mask)
        attention_output = self_attention_outputs[0]
        outputs = self_attention_outputs[1:]  # add self attentions if we output attention weights
        layer_output = apply_chunking_to_forward(
            self.feed_forward_chunk, self.chunk_size_feed_forward, self.seq_len_dim, attention_output
        )
        outputs = (layer_output,) + outputs
        return outputs

    def feed_forward_chunk(self, attention_output):
        intermediate_output = self.intermediate(attention_output)
        layer_output = self.output(intermediate_output, attention_output)
        return layer_output


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])
        self.gradient_checkpointing = False

    def forward(self, hidden_states, attention_mask=None):
        for layer_module in self.layer:
            if self.gradient_checkpointing and self.training:
                layer_outputs = self._gradient_checkpointing_func(layer_module.__call__, hidden_states, attention_mask)
            else:
                layer_outputs = layer_module(hidden_states, attention_mask)
            hidden_states = layer_outputs[0]
        return (hidden_states,)


class BertPreTrainedModel(nn.Module):
    supports_gradient_checkpointing = True

    def __init__(self, config):
        super().__init__()
        self.config = config

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    def post_init(self):
        self.apply(self._init_weights)
        self.tie_weights()

    def tie_weights(self):
        pass

    def _init_weights(self, module):
        """Initialize the weights"""
        if isinstance(module, nn.Linear):
            # Slightly different from the TF version which uses truncated_normal for initialization
            # cf https://github.com/pytorch/pytorch/pull/5617
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)
        elif isinstance(module, BertLMPredictionHead):
            module.bias.data.zero_()

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        if not self.supports_gradient_checkpointing:
            raise ValueError(f"{self.__class__.__name__} does not support gradient checkpointing.")
        if gradient_checkpointing_kwargs is None:
            gradient_checkpointing_kwargs = {"use_reentrant": True}
        gradient_checkpointing_func = functools.partial(
            torch.utils.checkpoint.checkpoint, **gradient_checkpointing_kwargs
        )
        self._set_gradient_checkpointing(enable=True, gradient_checkpointing_func=gradient_checkpointing_func)

    def _set_gradient_checkpointing(self, enable=True, gradient_checkpointing_func=None):
        for module in self.modules():
            if hasattr(module, "gradient_checkpointing"):
                module._gradient_checkpointing_func = gradient_checkpointing_func
                module.gradient_checkpointing = enable

    def get_extended_attention_mask(self, attention_mask, input_shape, dtype=None):
        if dtype is None:
            dtype = self.dtype
        # We can provide a self-attention mask of dimensions [batch_size, from_seq_length, to_seq_length]
        # ourselves in which case we just need to make it broadcastable to all heads.
        if attention_mask.dim() == 3:
            extended_attention_mask = attention_mask[:, None, :, :]
        elif attention_mask.dim() == 2:
            # Provided a padding mask of dimensions [batch_size, seq_length]
            # - the model is an encoder, so make the mask broadcastable to [batch_size, num_heads, seq_length, seq_length]
            extended_attention_mask = attention_mask[:, None, None, :]
        else:
            raise ValueError(
                f"Wrong shape for input_ids (shape {input_shape}) or attention_mask (shape {attention_mask.shape})"
            )
        # Since attention_mask is 1.0 for positions we want to attend and 0.0 for
        # masked positions, this operation will create a tensor which is 0.0 for
        # positions we want to attend and the dtype's smallest value for masked positions.
        extended_attention_mask = extended_attention_mask.to(dtype=dtype)  # fp16 compatibility
        extended_attention_mask = (1.0 - extended_attention_mask) * torch.finfo(dtype).min
        return extended_attention_mask


class BertModel(BertPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        input_shape = input_ids.size()
        if attention_mask is None:
            attention_mask = torch.ones(input_shape, device=input_ids.device)
        embedding_output = self.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        extended_attention_mask = self.get_extended_attention_mask(attention_mask, input_shape)
        encoder_outputs = self.encoder(embedding_output, attention_mask=extended_attention_mask)
        sequence_output = encoder_outputs[0]
        return (sequence_output,) + encoder_outputs[1:]


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.transform_act_fn = nn.GELU()
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.transform_act_fn(hidden_states)
        hidden_states = self.LayerNorm(hidden_states)
        return hidden_states


class BertLMPredictionHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        # The output weights are the same as the input embeddings, but there is
        # an output-only bias for each token.
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        # Need a link between the two variables so that the bias is correctly resized with `resize_token_embeddings`
        self.decoder.bias = self.bias

    def forward(self, hidden_states):
        hidden_states = self.transform(hidden_states)
        hidden_states = self.decoder(hidden_states)
        return hidden_states


class BertOnlyMLMHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)

    def forward(self, sequence_output):
        prediction_scores = self.predictions(sequence_output)
        return prediction_scores


class BertForMaskedLM(BertPreTrainedModel):
    _tied_weights_keys = ["predictions.decoder.bias", "cls.predictions.decoder.weight"]

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(config)
        self.cls = BertOnlyMLMHead(config)
        self.post_init()

    def tie_weights(self):
        if hasattr(self, "cls"):
            self.cls.predictions.decoder.weight = self.bert.get_input_embeddings().weight

    def forward(self, input_ids, attention_mask=None, labels=None):
        outputs = self.bert(input_ids, attention_mask=attention_mask)
        sequence_output = outputs[0]
        prediction_scores = self.cls(sequence_output)
        masked_lm_loss = None
        if labels is not None:
            loss_fct = nn.CrossEntropyLoss()  # -100 index = padding token
            masked_lm_loss = loss_fct(prediction_scores.view(-1, self.config.vocab_size), labels.view(-1))
        return masked_lm_loss, prediction_scores


def examples_for(step):
    """Tokenised sentences of unequal lengths, ``[CLS] ... [SEP]``, as a ``Dataset`` of dicts gives them."""
    examples = []
    for row in range(BATCH):
        length = 6 + (row + step) % 5
        body = [4 + (3 * row + 5 * step + 7 * i + i * i) % (VOCAB - 4) for i in range(length)]
        examples.append({"input_ids": [1] + body + [2]})
    return examples


def build():
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig())
    if GRADIENT_CHECKPOINTING:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
    def lr_lambda(current_step: int):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))

    return optim.lr_scheduler.LambdaLR(optimizer, lr_lambda, last_epoch)


def train(model, steps=5):
    torch.manual_seed(42)  # the collator's draws
    collator = DataCollatorForLanguageModeling(
        ToyTokenizer(), mlm_probability=0.3, pad_to_multiple_of=8 if PAD_TO_MULTIPLE_OF_8 else None
    )
    no_decay = ["bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {
            "params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
            "weight_decay": 0.01,
        },
        {
            "params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optimizer = optim.AdamW(optimizer_grouped_parameters, lr=1e-2)
    lr_scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=steps + 1)
    losses, masked_counts, masked_inputs = [], [], []
    model.train()
    for step in range(steps):
        batch = collator(examples_for(step))
        masked_counts.append(int((batch["labels"] != -100).sum()))
        masked_inputs.append(batch["input_ids"].tolist())
        loss, _ = model(**batch)
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        losses.append(loss.item())

    model.eval()
    with torch.no_grad():
        batch = collator(examples_for(steps))
        eval_loss, logits = model(**batch)
        predictions = logits.argmax(dim=-1)
        mask = batch["labels"] != -100
        accuracy = (predictions[mask] == batch["labels"][mask]).float().mean().item()
    return {
        "losses": losses,
        "masked_counts": masked_counts,
        "masked_inputs": masked_inputs,
        "eval_perplexity": math.exp(eval_loss.item()),
        "masked_accuracy": accuracy,
        "tied": model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight,
        "persistent_keys": sorted(k for k in model.state_dict() if "position_ids" in k or "token_type_ids" in k),
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
