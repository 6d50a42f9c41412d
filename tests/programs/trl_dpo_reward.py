"""Preference tuning of a small causal language model, written the way Hugging Face TRL's ``SFTTrainer``
(``DataCollatorForCompletionOnlyLM``), ``RewardTrainer`` and ``DPOTrainer`` and transformers'
``*ForSequenceClassification`` write it.

Idioms (``STAGE``): supervised fine-tuning (``"sft"``) with the prompt's labels set to -100 by finding the
response template in each row (``np.where(batch["labels"][i] == template[0])[0]`` on a tensor row, then
``batch["labels"][i, :idx] = -100``); a reward model (``"reward"``) as ``LlamaForSequenceClassification``
pools it: the last non-pad token by ``torch.eq(input_ids, pad_token_id).int().argmax(-1) - 1`` and ``%
input_ids.shape[-1]``, ``logits[torch.arange(batch_size, device=logits.device), sequence_lengths]``, the
pairwise loss ``-nn.functional.logsigmoid(rewards_chosen - rewards_rejected).mean()`` and its accuracy;
DPO (``"dpo"``): a frozen reference model by ``copy.deepcopy`` with ``requires_grad_(False)`` and
``eval()``, ``concatenated_inputs`` padding chosen and rejected to one length (``pad_to_length`` by
``torch.cat`` with ``pad_value * torch.ones(*pad_size)``), ``get_batch_logps`` (``labels[:, 1:].clone()``,
``logits[:, :-1, :]``, ``loss_mask = labels != label_pad_token_id``, ``labels[labels == -100] = 0``,
``torch.gather(logits.log_softmax(-1), dim=2, index=labels.unsqueeze(2)).squeeze(2)``, ``(per_token_logps *
loss_mask).sum(-1)``), the sigmoid, hinge and IPO losses (``LOSS``) with label smoothing, rewards ``beta *
(policy - reference).detach()`` and ``(chosen_rewards > rejected_rewards).float()`` accuracies, the
reference forward under ``torch.no_grad()``; ``gradient_accumulation`` and ``clip_grad_norm_``.
"""

from __future__ import annotations

import copy

import numpy as np
from shim import F, nn, optim, torch

STAGE = "dpo"  # or "sft", "reward"
LOSS = "sigmoid"  # or "hinge", "ipo"
DROPOUT = 0.1
VOCAB, HIDDEN, HEADS, LAYERS, MAX_LEN = 24, 16, 2, 2, 16
PAD, BOS, EOS = 0, 1, 2
RESPONSE_TEMPLATE = [3, 4]  # "### Answer:"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(HIDDEN)
        self.attn = nn.MultiheadAttention(HIDDEN, HEADS, dropout=DROPOUT, batch_first=True)
        self.ln_2 = nn.LayerNorm(HIDDEN)
        self.mlp = nn.Sequential(nn.Linear(HIDDEN, 4 * HIDDEN), nn.GELU(), nn.Linear(4 * HIDDEN, HIDDEN))

    def forward(self, x, causal_mask, key_padding_mask):
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, attn_mask=causal_mask, key_padding_mask=key_padding_mask, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class TinyCausalLM(nn.Module):
    def __init__(self, num_labels=None):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, HIDDEN, padding_idx=PAD)
        self.embed_positions = nn.Embedding(MAX_LEN, HIDDEN)
        self.layers = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.norm = nn.LayerNorm(HIDDEN)
        # a causal LM head, or a sequence-classification "score" head for a reward model
        self.num_labels = num_labels
        if num_labels is None:
            self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)
        else:
            self.score = nn.Linear(HIDDEN, num_labels, bias=False)

    def forward(self, input_ids, attention_mask=None, labels=None):
        seq_len = input_ids.shape[1]
        causal_mask = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=input_ids.device), diagonal=1)
        key_padding_mask = None if attention_mask is None else attention_mask == 0
        hidden = self.embed_tokens(input_ids) + self.embed_positions(torch.arange(seq_len, device=input_ids.device))
        for layer in self.layers:
            hidden = layer(hidden, causal_mask, key_padding_mask)
        hidden = self.norm(hidden)
        if self.num_labels is not None:
            return self._sequence_classification(input_ids, self.score(hidden))
        logits = self.lm_head(hidden)
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = nn.CrossEntropyLoss()(shift_logits.view(-1, VOCAB), shift_labels.view(-1))
        return {"loss": loss, "logits": logits}

    def _sequence_classification(self, input_ids, logits):
        batch_size = input_ids.shape[0]
        # if no pad token found, use modulo instead of reverse indexing for ONNX compatibility
        sequence_lengths = torch.eq(input_ids, PAD).int().argmax(-1) - 1
        sequence_lengths = sequence_lengths % input_ids.shape[-1]
        sequence_lengths = sequence_lengths.to(logits.device)
        pooled_logits = logits[torch.arange(batch_size, device=logits.device), sequence_lengths]
        return {"logits": pooled_logits}


# ------------------------------------------------------------------ data


def preference_rows(step):
    """(prompt, chosen, rejected) token lists: the chosen answer continues the prompt's count."""
    rows = []
    for i in range(3):
        start = 5 + (step + 2 * i) % 12
        prompt = [BOS, start, start + 1] + RESPONSE_TEMPLATE
        chosen = [start + 2, start + 3, EOS][: 2 + (i + step) % 2] + [EOS]
        rejected = [5 + (start * 7) % 17, EOS]
        rows.append((prompt, chosen, rejected))
    return rows


def pad_rows(rows, pad=PAD):
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    return ids, mask


class DataCollatorForCompletionOnlyLM:
    def __init__(self, response_template, ignore_index=-100):
        self.response_token_ids = response_template
        self.ignore_index = ignore_index

    def __call__(self, examples):
        input_ids, attention_mask = pad_rows(examples)
        batch = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": input_ids.clone()}
        batch["labels"][attention_mask == 0] = self.ignore_index
        for i in range(len(examples)):
            response_token_ids_start_idx = None
            for idx in np.where(batch["labels"][i] == self.response_token_ids[0])[0]:
                # `response_token_ids` is `'### Response:\n'`, here we are just making sure that the token IDs match
                if self.response_token_ids == batch["labels"][i][idx : idx + len(self.response_token_ids)].tolist():
                    response_token_ids_start_idx = idx
            if response_token_ids_start_idx is None:
                batch["labels"][i, :] = self.ignore_index
            else:
                response_token_ids_end_idx = response_token_ids_start_idx + len(self.response_token_ids)
                # Make pytorch loss function ignore all tokens up through the end of the response key
                batch["labels"][i, :response_token_ids_end_idx] = self.ignore_index
        return batch


def pad_to_length(tensor, length, pad_value, dim=-1):
    if tensor.size(dim) >= length:
        return tensor
    pad_size = list(tensor.shape)
    pad_size[dim] = length - tensor.size(dim)
    return torch.cat(
        [tensor, pad_value * torch.ones(*pad_size, dtype=tensor.dtype, device=tensor.device)],
        dim=dim,
    )


def dpo_batch(step):
    rows = preference_rows(step)
    batch = {}
    for kind, column in (("chosen", 1), ("rejected", 2)):
        sequences = [row[0] + row[column] for row in rows]
        ids, mask = pad_rows(sequences)
        labels = ids.masked_fill(mask == 0, -100)
        labels[:, : len(rows[0][0])] = -100  # the prompt is not scored
        batch[f"{kind}_input_ids"], batch[f"{kind}_attention_mask"], batch[f"{kind}_labels"] = ids, mask, labels
    return batch


# ------------------------------------------------------------------ trainers


class DPOTrainer:
    def __init__(self, model, ref_model, beta=0.1, loss_type="sigmoid", label_smoothing=0.0):
        self.model = model
        self.ref_model = ref_model
        self.beta = beta
        self.loss_type = loss_type
        self.label_smoothing = label_smoothing
        self.label_pad_token_id = -100
        self.padding_value = PAD

    @staticmethod
    def concatenated_inputs(batch, label_pad_token_id=-100, padding_value=0):
        concatenated_batch = {}
        max_length = max(batch["chosen_input_ids"].shape[1], batch["rejected_input_ids"].shape[1])
        for k in batch:
            if k.startswith("chosen") and isinstance(batch[k], torch.Tensor):
                if "labels" in k:
                    pad_value = label_pad_token_id
                elif k.endswith("_input_ids"):
                    pad_value = padding_value
                else:
                    pad_value = 0
                concatenated_key = k.replace("chosen", "concatenated")
                concatenated_batch[concatenated_key] = pad_to_length(batch[k], max_length, pad_value=pad_value)
        for k in batch:
            if k.startswith("rejected") and isinstance(batch[k], torch.Tensor):
                if "labels" in k:
                    pad_value = label_pad_token_id
                elif k.endswith("_input_ids"):
                    pad_value = padding_value
                else:
                    pad_value = 0
                concatenated_key = k.replace("rejected", "concatenated")
                concatenated_batch[concatenated_key] = torch.cat(
                    (concatenated_batch[concatenated_key], pad_to_length(batch[k], max_length, pad_value=pad_value)),
                    dim=0,
                )
        return concatenated_batch

    @staticmethod
    def get_batch_logps(logits, labels, average_log_prob=False, label_pad_token_id=-100):
        if logits.shape[:-1] != labels.shape:
            raise ValueError("Logits (batch and sequence length dim) and labels must have the same shape.")
        labels = labels[:, 1:].clone()
        logits = logits[:, :-1, :]
        loss_mask = labels != label_pad_token_id
        # dummy token; we'll ignore the losses on these tokens later
        labels[labels == label_pad_token_id] = 0
        per_token_logps = torch.gather(logits.log_softmax(-1), dim=2, index=labels.unsqueeze(2)).squeeze(2)
        if average_log_prob:
            return (per_token_logps * loss_mask).sum(-1) / loss_mask.sum(-1)
        return (per_token_logps * loss_mask).sum(-1)

    def concatenated_forward(self, model, batch):
        concatenated_batch = self.concatenated_inputs(
            batch, label_pad_token_id=self.label_pad_token_id, padding_value=self.padding_value
        )
        len_chosen = batch["chosen_labels"].shape[0]
        all_logits = model(
            concatenated_batch["concatenated_input_ids"],
            attention_mask=concatenated_batch["concatenated_attention_mask"],
        )["logits"].to(torch.float32)
        all_logps = self.get_batch_logps(
            all_logits, concatenated_batch["concatenated_labels"], label_pad_token_id=self.label_pad_token_id
        )
        chosen_logps = all_logps[:len_chosen]
        rejected_logps = all_logps[len_chosen:]
        chosen_logits = all_logits[:len_chosen]
        rejected_logits = all_logits[len_chosen:]
        return (chosen_logps, rejected_logps, chosen_logits, rejected_logits)

    def dpo_loss(self, policy_chosen_logps, policy_rejected_logps, reference_chosen_logps, reference_rejected_logps):
        pi_logratios = policy_chosen_logps - policy_rejected_logps
        ref_logratios = reference_chosen_logps - reference_rejected_logps
        logits = pi_logratios - ref_logratios
        if self.loss_type == "sigmoid":
            losses = (
                -F.logsigmoid(self.beta * logits) * (1 - self.label_smoothing)
                - F.logsigmoid(-self.beta * logits) * self.label_smoothing
            )
        elif self.loss_type == "hinge":
            losses = torch.relu(1 - self.beta * logits)
        elif self.loss_type == "ipo":
            # eqn (17) of the paper where beta is the regularization parameter for the IPO loss, denoted by tau in the paper.
            losses = (logits - 1 / (2 * self.beta)) ** 2
        else:
            raise ValueError(f"Unknown loss type: {self.loss_type}. Should be one of ['sigmoid', 'hinge', 'ipo']")
        chosen_rewards = self.beta * (policy_chosen_logps - reference_chosen_logps).detach()
        rejected_rewards = self.beta * (policy_rejected_logps - reference_rejected_logps).detach()
        return losses, chosen_rewards, rejected_rewards

    def get_batch_loss_metrics(self, batch):
        metrics = {}
        policy_chosen_logps, policy_rejected_logps, policy_chosen_logits, _ = self.concatenated_forward(
            self.model, batch
        )
        with torch.no_grad():
            reference_chosen_logps, reference_rejected_logps, _, _ = self.concatenated_forward(self.ref_model, batch)
        losses, chosen_rewards, rejected_rewards = self.dpo_loss(
            policy_chosen_logps, policy_rejected_logps, reference_chosen_logps, reference_rejected_logps
        )
        reward_accuracies = (chosen_rewards > rejected_rewards).float()
        metrics["rewards/chosen"] = chosen_rewards.mean().cpu().item()
        metrics["rewards/rejected"] = rejected_rewards.mean().cpu().item()
        metrics["rewards/accuracies"] = reward_accuracies.mean().cpu().item()
        metrics["rewards/margins"] = (chosen_rewards - rejected_rewards).mean().cpu().item()
        metrics["logps/chosen"] = policy_chosen_logps.detach().mean().cpu().item()
        metrics["logits/chosen"] = policy_chosen_logits.detach().mean().cpu().item()
        return losses.mean(), metrics


def reward_loss(model, batch):
    rewards_chosen = model(batch["input_ids_chosen"], attention_mask=batch["attention_mask_chosen"])["logits"]
    rewards_rejected = model(batch["input_ids_rejected"], attention_mask=batch["attention_mask_rejected"])["logits"]
    loss = -nn.functional.logsigmoid(rewards_chosen - rewards_rejected).mean()
    accuracy = (rewards_chosen > rewards_rejected).float().mean()
    return loss, accuracy


def reward_batch(step):
    rows = preference_rows(step)
    chosen_ids, chosen_mask = pad_rows([p + c for p, c, _ in rows])
    rejected_ids, rejected_mask = pad_rows([p + r for p, _, r in rows])
    return {
        "input_ids_chosen": chosen_ids,
        "attention_mask_chosen": chosen_mask,
        "input_ids_rejected": rejected_ids,
        "attention_mask_rejected": rejected_mask,
    }


# ------------------------------------------------------------------ training


def build():
    torch.manual_seed(0)
    return TinyCausalLM(num_labels=1 if STAGE == "reward" else None)


def train(model, steps=4):
    optimizer = optim.AdamW(model.parameters(), lr=5e-3)
    accumulation = 2
    losses, metrics = [], []
    collator = DataCollatorForCompletionOnlyLM(RESPONSE_TEMPLATE)
    model.train()
    if STAGE == "dpo":
        ref_model = copy.deepcopy(model)
        ref_model.requires_grad_(False)
        ref_model.eval()
        # the policy starts from a supervised step past the reference (else every reward is round-off)
        model(**collator([p + c for p, c, _ in preference_rows(99)]))["loss"].backward()
        optimizer.step()
        optimizer.zero_grad()
        trainer = DPOTrainer(
            model, ref_model, beta=0.5, loss_type=LOSS, label_smoothing=0.1 if LOSS == "sigmoid" else 0
        )
    for step in range(steps):
        if STAGE == "sft":
            batch = collator([p + c for p, c, _ in preference_rows(step)])
            loss = model(**batch)["loss"]
            metrics.append(int((batch["labels"] != -100).sum()))
        elif STAGE == "reward":
            loss, accuracy = reward_loss(model, reward_batch(step))
            metrics.append(accuracy.item())
        else:
            loss, step_metrics = trainer.get_batch_loss_metrics(dpo_batch(step))
            metrics.append([step_metrics[k] for k in sorted(step_metrics)])
        (loss / accumulation).backward()
        if (step + 1) % accumulation == 0:
            metrics.append(nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
            optimizer.step()
            optimizer.zero_grad()
        losses.append(loss.item())
    result = {"losses": losses, "metrics": metrics}
    if STAGE == "dpo":
        result["reference_frozen"] = all(not p.requires_grad for p in ref_model.parameters())
        result["policy_moved"] = not torch.equal(model.embed_tokens.weight, ref_model.embed_tokens.weight)
    return result


if __name__ == "__main__":
    print(train(build(), steps=20))
