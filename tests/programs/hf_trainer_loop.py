"""A causal language model trained by a Hugging Face ``Trainer``-style loop, as ``trainer.py``,
``optimization.py``, ``trainer_pt_utils.py``, ``run_clm.py`` and ``modeling_opt.py`` write it.

Idioms: a ``@dataclass`` ``TrainingArguments`` with ``field(default=...)`` and ``__post_init__``;
``set_seed`` (``random``, ``numpy``, ``torch.manual_seed``, ``torch.cuda.manual_seed_all``); run_clm's
``group_texts`` (``itertools.chain`` of the tokenised texts cut into blocks, ``labels`` a copy of
``input_ids``); ``default_data_collator`` stacking dicts of lists by ``torch.tensor``; OPT's learned
positions ``(torch.cumsum(attention_mask, dim=1).type_as(attention_mask) * attention_mask).long() - 1``
shifted by an ``offset`` of 2 in an ``nn.Embedding`` subclass; ``_make_causal_mask`` (``torch.full((t, t),
torch.finfo(dtype).min)``, ``mask.masked_fill_(mask_cond < (mask_cond + 1).view(t, 1), 0)``) plus
``_expand_mask`` (``inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)``);
``scaling = head_dim**-0.5`` on the query projection and ``bmm`` attention over ``(bsz * heads, t, d)``;
``get_parameter_names(model, [nn.LayerNorm])`` by recursion over ``named_children``, decay groups
without ``bias``; ``get_cosine_schedule_with_warmup`` (or linear, ``SCHEDULE``) as ``LambdaLR`` over a
``functools.partial`` of a module-level lambda; gradient accumulation with ``loss /
gradient_accumulation_steps``, ``tr_loss += loss.detach()``, ``clip_grad_norm_``'s returned norm logged
by ``.item()``, ``tr_loss -= tr_loss``, ``lr_scheduler.get_last_lr()[0]``; evaluation under
``torch.no_grad()`` with ``loss.repeat(batch_size)``, ``torch.cat`` and ``math.exp(eval_loss)`` (with the
``OverflowError`` guard); ``save_pretrained`` as ``torch.save(model.state_dict(), path)`` and a ``json``
config, ``from_pretrained`` by ``torch.load(path, map_location="cpu", weights_only=True)``.
"""

from __future__ import annotations

import json
import math
import os
import random
import tempfile
from dataclasses import asdict, dataclass, field
from functools import partial
from itertools import chain

import numpy as np
from shim import nn, optim, torch

SCHEDULE = "cosine"  # or "linear"
ACCUMULATION = 2
DROPOUT = 0.1
VOCAB, HIDDEN, HEADS, LAYERS, FFN, MAX_POSITIONS, BLOCK = 32, 16, 2, 2, 32, 16, 8


@dataclass
class TrainingArguments:
    output_dir: str = field(metadata={"help": "The output directory where the model checkpoints will be written."})
    per_device_train_batch_size: int = field(default=2)
    per_device_eval_batch_size: int = field(default=4)
    gradient_accumulation_steps: int = field(default=1)
    learning_rate: float = field(default=5e-5)
    weight_decay: float = field(default=0.0)
    adam_beta1: float = field(default=0.9)
    adam_beta2: float = field(default=0.999)
    adam_epsilon: float = field(default=1e-8)
    max_grad_norm: float = field(default=1.0)
    max_steps: int = field(default=-1)
    lr_scheduler_type: str = field(default="linear")
    warmup_ratio: float = field(default=0.0)
    warmup_steps: int = field(default=0)
    logging_steps: int = field(default=1)
    seed: int = field(default=42)

    def __post_init__(self):
        if self.warmup_ratio < 0 or self.warmup_ratio > 1:
            raise ValueError("warmup_ratio must lie in range [0,1]")

    def get_warmup_steps(self, num_training_steps: int):
        return self.warmup_steps if self.warmup_steps > 0 else math.ceil(num_training_steps * self.warmup_ratio)


def set_seed(seed: int):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def _get_cosine_schedule_with_warmup_lr_lambda(
    current_step: int, *, num_warmup_steps: int, num_training_steps: int, num_cycles: float
):
    if current_step < num_warmup_steps:
        return float(current_step) / float(max(1, num_warmup_steps))
    progress = float(current_step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))


def get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, num_cycles=0.5, last_epoch=-1):
    lr_lambda = partial(
        _get_cosine_schedule_with_warmup_lr_lambda,
        num_warmup_steps=num_warmup_steps,
        num_training_steps=num_training_steps,
        num_cycles=num_cycles,
    )
    return optim.lr_scheduler.LambdaLR(optimizer, lr_lambda, last_epoch)


def _get_linear_schedule_with_warmup_lr_lambda(current_step: int, *, num_warmup_steps: int, num_training_steps: int):
    if current_step < num_warmup_steps:
        return float(current_step) / float(max(1, num_warmup_steps))
    return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
    lr_lambda = partial(
        _get_linear_schedule_with_warmup_lr_lambda,
        num_warmup_steps=num_warmup_steps,
        num_training_steps=num_training_steps,
    )
    return optim.lr_scheduler.LambdaLR(optimizer, lr_lambda, last_epoch)


TYPE_TO_SCHEDULER_FUNCTION = {"linear": get_linear_schedule_with_warmup, "cosine": get_cosine_schedule_with_warmup}


def get_parameter_names(model, forbidden_layer_types):
    """
    Returns the names of the model parameters that are not inside a forbidden layer.
    """
    result = []
    for name, child in model.named_children():
        result += [
            f"{name}.{n}"
            for n in get_parameter_names(child, forbidden_layer_types)
            if not isinstance(child, tuple(forbidden_layer_types))
        ]
    # Add model specific parameters (defined with nn.Parameter) since they are not in any child.
    result += list(model._parameters.keys())
    return result


class OPTConfig:
    model_type = "opt"

    def __init__(self, **kwargs):
        self.vocab_size = kwargs.pop("vocab_size", VOCAB)
        self.hidden_size = kwargs.pop("hidden_size", HIDDEN)
        self.num_attention_heads = kwargs.pop("num_attention_heads", HEADS)
        self.num_hidden_layers = kwargs.pop("num_hidden_layers", LAYERS)
        self.ffn_dim = kwargs.pop("ffn_dim", FFN)
        self.max_position_embeddings = kwargs.pop("max_position_embeddings", MAX_POSITIONS)
        self.dropout = kwargs.pop("dropout", DROPOUT)
        self.init_std = kwargs.pop("init_std", 0.02)
        self.pad_token_id = kwargs.pop("pad_token_id", 1)

    def to_dict(self):
        return dict(self.__dict__)

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json_file(cls, json_file):
        with open(json_file, encoding="utf-8") as reader:
            return cls(**json.loads(reader.read()))


class OPTLearnedPositionalEmbedding(nn.Embedding):
    """
    This module learns positional embeddings up to a fixed maximum size.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int):
        # OPT is set up so that if padding_idx is specified then offset the embedding ids by 2
        # and adjust num_embeddings appropriately. Other models don't have this hack
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, attention_mask, past_key_values_length: int = 0):
        """`input_ids_shape` is expected to be [bsz x seqlen]."""
        attention_mask = attention_mask.long()

        # create positions depending on attention_mask
        positions = (torch.cumsum(attention_mask, dim=1).type_as(attention_mask) * attention_mask).long() - 1

        # cut positions if `past_key_values_length` is > 0
        positions = positions[:, past_key_values_length:]

        return super().forward(positions + self.offset)


def _make_causal_mask(input_ids_shape, dtype, device, past_key_values_length: int = 0):
    """
    Make causal mask used for bi-directional self-attention.
    """
    bsz, tgt_len = input_ids_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min, device=device)
    mask_cond = torch.arange(mask.size(-1), device=device)
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)

    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(tgt_len, past_key_values_length, dtype=dtype, device=device), mask], dim=-1)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len + past_key_values_length)


def _expand_mask(mask, dtype, tgt_len=None):
    """
    Expands attention_mask from `[bsz, seq_len]` to `[bsz, 1, tgt_seq_len, src_seq_len]`.
    """
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len

    expanded_mask = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)

    inverted_mask = 1.0 - expanded_mask

    return inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)


class OPTAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = embed_dim // num_heads
        if (self.head_dim * num_heads) != self.embed_dim:
            raise ValueError(
                f"embed_dim must be divisible by num_heads (got `embed_dim`: {self.embed_dim}"
                f" and `num_heads`: {num_heads})."
            )
        self.scaling = self.head_dim**-0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def _shape(self, tensor, seq_len: int, bsz: int):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, attention_mask=None):
        bsz, tgt_len, _ = hidden_states.size()

        # get query proj
        query_states = self.q_proj(hidden_states) * self.scaling
        key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
        value_states = self._shape(self.v_proj(hidden_states), -1, bsz)

        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.view(*proj_shape)
        value_states = value_states.view(*proj_shape)

        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))

        if attention_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + attention_mask
            attn_weights = torch.max(
                attn_weights, torch.tensor(torch.finfo(attn_weights.dtype).min, device=attn_weights.device)
            )
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)

        # upcast to fp32 if the weights are in fp16. Please see https://github.com/huggingface/transformers/pull/17437
        if attn_weights.dtype == torch.float16:
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(torch.float16)
        else:
            attn_weights = nn.functional.softmax(attn_weights, dim=-1)

        attn_probs = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2)

        # Use the `embed_dim` from the config (stored in the class) rather than `hidden_state` because `attn_output` can be
        # partitioned aross GPUs when using tensor-parallelism.
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        attn_output = self.out_proj(attn_output)
        return attn_output


class OPTDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_dim = config.hidden_size
        self.self_attn = OPTAttention(self.embed_dim, config.num_attention_heads, dropout=config.dropout)
        self.do_layer_norm_before = True
        self.dropout = config.dropout
        self.activation_fn = nn.ReLU()
        self.self_attn_layer_norm = nn.LayerNorm(self.embed_dim)
        self.fc1 = nn.Linear(self.embed_dim, config.ffn_dim)
        self.fc2 = nn.Linear(config.ffn_dim, self.embed_dim)
        self.final_layer_norm = nn.LayerNorm(self.embed_dim)

    def forward(self, hidden_states, attention_mask=None):
        residual = hidden_states
        # 125m, 1.7B, ..., 175B applies layer norm BEFORE attention
        if self.do_layer_norm_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states = self.self_attn(hidden_states=hidden_states, attention_mask=attention_mask)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states

        # Fully Connected
        hidden_states_shape = hidden_states.shape
        hidden_states = hidden_states.reshape(-1, hidden_states.size(-1))
        residual = hidden_states
        if self.do_layer_norm_before:
            hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        hidden_states = self.fc2(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = (residual + hidden_states).view(hidden_states_shape)
        return (hidden_states,)


class OPTPreTrainedModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config

    def _init_weights(self, module):
        std = self.config.init_std
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()

    def post_init(self):
        self.apply(self._init_weights)
        self.tie_weights()

    def tie_weights(self):
        pass

    def save_pretrained(self, save_directory):
        os.makedirs(save_directory, exist_ok=True)
        with open(os.path.join(save_directory, "config.json"), "w", encoding="utf-8") as writer:
            writer.write(self.config.to_json_string())
        torch.save(self.state_dict(), os.path.join(save_directory, "pytorch_model.bin"))

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path):
        config = OPTConfig.from_json_file(os.path.join(pretrained_model_name_or_path, "config.json"))
        model = cls(config)
        state_dict = torch.load(
            os.path.join(pretrained_model_name_or_path, "pytorch_model.bin"), map_location="cpu", weights_only=True
        )
        model.load_state_dict(state_dict)
        model.eval()
        return model


class OPTDecoder(OPTPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.embed_positions = OPTLearnedPositionalEmbedding(config.max_position_embeddings, config.hidden_size)
        self.final_layer_norm = nn.LayerNorm(config.hidden_size)
        self.layers = nn.ModuleList([OPTDecoderLayer(config) for _ in range(config.num_hidden_layers)])

    def _prepare_decoder_attention_mask(self, attention_mask, input_shape, inputs_embeds, past_key_values_length):
        # create causal mask
        # [bsz, seq_len] -> [bsz, 1, tgt_seq_len, src_seq_len]
        combined_attention_mask = None
        if input_shape[-1] > 1:
            combined_attention_mask = _make_causal_mask(
                input_shape,
                inputs_embeds.dtype,
                device=inputs_embeds.device,
                past_key_values_length=past_key_values_length,
            )

        if attention_mask is not None:
            # [bsz, seq_len] -> [bsz, 1, tgt_seq_len, src_seq_len]
            expanded_attn_mask = _expand_mask(attention_mask, inputs_embeds.dtype, tgt_len=input_shape[-1]).to(
                inputs_embeds.device
            )
            combined_attention_mask = (
                expanded_attn_mask if combined_attention_mask is None else expanded_attn_mask + combined_attention_mask
            )
        return combined_attention_mask

    def forward(self, input_ids, attention_mask=None):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        inputs_embeds = self.embed_tokens(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones(inputs_embeds.shape[:2], dtype=torch.bool, device=inputs_embeds.device)
        pos_embeds = self.embed_positions(attention_mask, 0)
        causal_attention_mask = self._prepare_decoder_attention_mask(attention_mask, input_shape, inputs_embeds, 0)
        hidden_states = inputs_embeds + pos_embeds
        for decoder_layer in self.layers:
            layer_outputs = decoder_layer(hidden_states, attention_mask=causal_attention_mask)
            hidden_states = layer_outputs[0]
        hidden_states = self.final_layer_norm(hidden_states)
        return hidden_states


class OPTModel(OPTPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.decoder = OPTDecoder(config)
        self.post_init()

    def forward(self, input_ids, attention_mask=None):
        return self.decoder(input_ids, attention_mask)


class OPTForCausalLM(OPTPreTrainedModel):
    _tied_weights_keys = ["lm_head.weight"]

    def __init__(self, config):
        super().__init__(config)
        self.model = OPTModel(config)
        # the lm_head weight is automatically tied to the embed tokens weight
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def tie_weights(self):
        if hasattr(self, "lm_head"):
            self.lm_head.weight = self.model.decoder.embed_tokens.weight

    def forward(self, input_ids, attention_mask=None, labels=None):
        outputs = self.model(input_ids, attention_mask)
        logits = self.lm_head(outputs).contiguous()
        loss = None
        if labels is not None:
            # move labels to correct device to enable model parallelism
            labels = labels.to(logits.device)
            # Shift so that tokens < n predict n
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            # Flatten the tokens
            loss_fct = nn.CrossEntropyLoss()
            loss = loss_fct(shift_logits.view(-1, self.config.vocab_size), shift_labels.view(-1))
        return {"loss": loss, "logits": logits}


def tokenized_texts(n):
    """A ``datasets.map(tokenize_function, batched=True)`` result: texts of unequal token counts."""
    input_ids = [[2 + (7 * t + 3 * i + i * i // 3) % (VOCAB - 2) for i in range(5 + (3 * t) % 7)] for t in range(n)]
    return {"input_ids": input_ids, "attention_mask": [[1] * len(ids) for ids in input_ids]}


def group_texts(examples, block_size=BLOCK):
    # Concatenate all texts.
    concatenated_examples = {k: list(chain(*examples[k])) for k in examples.keys()}
    total_length = len(concatenated_examples[list(examples.keys())[0]])
    # We drop the small remainder, and if the total_length < block_size  we exclude this batch and return an empty dict.
    # We could add padding if the model supported it instead of this drop, you can customize this part to your needs.
    total_length = (total_length // block_size) * block_size
    # Split by chunks of max_len.
    result = {
        k: [t[i : i + block_size] for i in range(0, total_length, block_size)] for k, t in concatenated_examples.items()
    }
    result["labels"] = result["input_ids"].copy()
    return result


def default_data_collator(features):
    first = features[0]
    batch = {}
    for k, v in first.items():
        if v is not None and not isinstance(v, str):
            batch[k] = torch.tensor([f[k] for f in features])
    return batch


def rows(dataset):
    return [dict(zip(dataset, values)) for values in zip(*dataset.values())]


class Trainer:
    def __init__(self, model, args, train_dataset, eval_dataset, data_collator=default_data_collator):
        self.model = model
        self.args = args
        self.train_dataset = train_dataset
        self.eval_dataset = eval_dataset
        self.data_collator = data_collator
        self.optimizer = None
        self.lr_scheduler = None
        self.log_history = []

    def create_optimizer(self):
        decay_parameters = get_parameter_names(self.model, [nn.LayerNorm])
        decay_parameters = [name for name in decay_parameters if "bias" not in name]
        optimizer_grouped_parameters = [
            {
                "params": [p for n, p in self.model.named_parameters() if (n in decay_parameters and p.requires_grad)],
                "weight_decay": self.args.weight_decay,
            },
            {
                "params": [
                    p for n, p in self.model.named_parameters() if (n not in decay_parameters and p.requires_grad)
                ],
                "weight_decay": 0.0,
            },
        ]
        optimizer_kwargs = {
            "lr": self.args.learning_rate,
            "betas": (self.args.adam_beta1, self.args.adam_beta2),
            "eps": self.args.adam_epsilon,
        }
        self.optimizer = optim.AdamW(optimizer_grouped_parameters, **optimizer_kwargs)
        return self.optimizer

    def create_scheduler(self, num_training_steps, optimizer=None):
        schedule_func = TYPE_TO_SCHEDULER_FUNCTION[self.args.lr_scheduler_type]
        self.lr_scheduler = schedule_func(
            self.optimizer if optimizer is None else optimizer,
            num_warmup_steps=self.args.get_warmup_steps(num_training_steps),
            num_training_steps=num_training_steps,
        )
        return self.lr_scheduler

    def get_train_dataloader(self):
        examples = rows(self.train_dataset)
        size = self.args.per_device_train_batch_size
        return [self.data_collator(examples[i : i + size]) for i in range(0, len(examples) - size + 1, size)]

    def compute_loss(self, model, inputs):
        outputs = model(**inputs)
        return outputs["loss"] if isinstance(outputs, dict) else outputs[0]

    def training_step(self, model, inputs):
        model.train()
        loss = self.compute_loss(model, inputs)
        if self.args.gradient_accumulation_steps > 1:
            loss = loss / self.args.gradient_accumulation_steps
        loss.backward()
        return loss.detach()

    def train(self):
        args = self.args
        train_dataloader = self.get_train_dataloader()
        max_steps = args.max_steps
        self.create_optimizer()
        self.create_scheduler(num_training_steps=max_steps)
        model = self.model
        tr_loss = torch.tensor(0.0)
        self._total_loss_scalar = 0.0
        global_step = 0
        model.zero_grad()
        step = -1
        while global_step < max_steps:
            for inputs in train_dataloader:
                step += 1
                tr_loss_step = self.training_step(model, inputs)
                tr_loss += tr_loss_step
                if (step + 1) % args.gradient_accumulation_steps == 0:
                    # Gradient clipping
                    _grad_norm = nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                    grad_norm = _grad_norm.item() if hasattr(_grad_norm, "item") else _grad_norm
                    self.optimizer.step()
                    self.lr_scheduler.step()
                    model.zero_grad()
                    global_step += 1
                    if global_step % args.logging_steps == 0:
                        tr_loss_scalar = tr_loss.mean().item()
                        # reset tr_loss to zero
                        tr_loss -= tr_loss
                        logs = {
                            "loss": round(tr_loss_scalar / args.logging_steps, 4),
                            "grad_norm": grad_norm,
                            "learning_rate": self.lr_scheduler.get_last_lr()[0],
                        }
                        self._total_loss_scalar += tr_loss_scalar
                        self.log_history.append(logs)
                    if global_step >= max_steps:
                        break
        return self._total_loss_scalar / global_step

    def evaluate(self):
        model = self.model
        model.eval()
        examples = rows(self.eval_dataset)
        size = self.args.per_device_eval_batch_size
        losses = []
        for i in range(0, len(examples), size):
            inputs = self.data_collator(examples[i : i + size])
            with torch.no_grad():
                loss = self.compute_loss(model, inputs)
            batch_size = inputs["input_ids"].shape[0]
            losses.append(loss.repeat(batch_size))
        losses = torch.cat(losses)
        eval_loss = torch.mean(losses)
        try:
            perplexity = math.exp(eval_loss)
        except OverflowError:
            perplexity = float("inf")
        return {"eval_loss": eval_loss.item(), "perplexity": perplexity}


def build():
    set_seed(0)
    return OPTForCausalLM(OPTConfig())


def train(model, steps=4):
    lm_datasets = group_texts(tokenized_texts(16))
    train_dataset = {k: v[:-2] for k, v in lm_datasets.items()}
    eval_dataset = {k: v[-2:] for k, v in lm_datasets.items()}
    with tempfile.TemporaryDirectory() as output_dir:
        args = TrainingArguments(
            output_dir=output_dir,
            per_device_train_batch_size=2,
            gradient_accumulation_steps=ACCUMULATION,
            learning_rate=5e-3,
            weight_decay=0.01,
            max_steps=steps,
            lr_scheduler_type=SCHEDULE,
            warmup_ratio=0.25,
            max_grad_norm=0.5,
            seed=0,
        )
        trainer = Trainer(model, args, train_dataset, eval_dataset)
        train_loss = trainer.train()
        metrics = trainer.evaluate()
        model.save_pretrained(os.path.join(output_dir, "final"))
        reloaded = OPTForCausalLM.from_pretrained(os.path.join(output_dir, "final"))
        with open(os.path.join(output_dir, "final", "config.json"), encoding="utf-8") as f:
            saved_config = json.load(f)
        reloaded_metrics = Trainer(reloaded, args, train_dataset, eval_dataset).evaluate()
        arguments = asdict(args)
    return {
        "losses": [log["loss"] for log in trainer.log_history],
        "grad_norms": [log["grad_norm"] for log in trainer.log_history],
        "lrs": [log["learning_rate"] for log in trainer.log_history],
        "train_loss": train_loss,
        "metrics": metrics,
        "reloaded_metrics": reloaded_metrics,
        "saved_config": sorted(saved_config.items()),
        "decay_groups": [len(g["params"]) for g in trainer.optimizer.param_groups],
        "arguments": arguments["gradient_accumulation_steps"],
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
