"""A policy as an ONNX graph: any runtime (onnxruntime in a server, a phone or a browser) plays it.

The graph (opset :data:`OPSET`), batch axis ``batch`` of any size::

    inputs   observation  float32 (batch, D)    the env's uint8 observation as float32, unscaled (layout version
                                               :data:`~pedro_env.observation_layout.LAYOUT_VERSION`, D entries)
             action_mask  bool    (batch, 133)  True where the action is legal
    outputs  logits       float32 (batch, 133)  masked action logits: -1e9 where illegal; the greedy action is
                                               their argmax, the policy's distribution their softmax
             value        float32 (batch,)      the critic's value of the position for the player to act (absent
                                               when the critic read the full state: a centralized critic)

The observation scale is inside the graph. What the graph is travels in its metadata (``metadata_props``, text;
JSON where a value is structured): :func:`policy_metadata` lists the keys. A policy of layout version 1 is
migrated as it is loaded (:func:`agents.policy.migrated_payload`), so every graph reads layout version 2.
"""

from __future__ import annotations

import io
import json
import warnings
from dataclasses import asdict
from typing import Any

import torch
from torch import nn

from agents.networks import MASKED_LOGIT, ActorCritic
from agents.policy import observation_layout, recorded_layout_version, trained_rule_sets
from pedro_env.actions import NUM_ACTIONS, action_to_str
from pedro_env.observation_layout import LAYOUT_VERSION, OBSERVATION_SIZE

OPSET = 17
"""The ONNX opset of the graph (onnxruntime 1.13 and later, onnxruntime-web included, run it)."""
ONNX_FORMAT = "pedro-rl/onnx-policy"
"""The ``format`` entry of the metadata: a graph written by :func:`onnx_policy_bytes`."""
INPUT_NAMES = ("observation", "action_mask")
OUTPUT_NAMES = ("logits", "value")


class PolicyGraph(nn.Module):
    """What the ONNX graph computes: an :class:`ActorCritic`'s masked logits (and value) from float32 observations."""

    def __init__(self, network: ActorCritic) -> None:
        super().__init__()
        self.network = network
        self.with_value = has_value_output(network)

    def forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> Any:
        scaled = observation * self.network.actor_scale  # floating inputs are read as scaled by the network
        if self.with_value:
            return self.network.logits_and_value(scaled, action_mask)
        return self.network.logits(scaled, action_mask)


def has_value_output(network: ActorCritic) -> bool:
    """Whether the graph has a ``value`` output: the critic reads the observation (not the full state)."""
    return network.shape.critic_input_size == network.shape.observation_size


def policy_metadata(payload: dict[str, Any], network: ActorCritic, source: str) -> dict[str, str]:
    """The ONNX metadata of the policy in checkpoint ``payload`` (``network`` as loaded from it), every value text:

    ``format`` (:data:`ONNX_FORMAT`); ``observation_layout_version``, ``observation_layout`` ([[piece, size], ...])
    and ``observation_size``: what the graph reads; ``num_actions`` and ``action_texts`` (index -> ``"bid 7"``,
    ``"play 5H"``); ``rules`` (the rule sets it was trained under, every PedroConfig key) and ``table_sizes``
    (``"2,3,4"``); ``outputs``; ``network`` (its shape); ``source`` and ``source_layout_version`` (the checkpoint it
    came from, the layout that recorded); ``decisions`` (its training decisions as recorded, a distilled policy's
    those of the policy it started from; 0 where none are); ``train_config`` (the training config it records: its
    recipe) and ``exported`` (the provenance an exported policy records)."""
    rule_sets = trained_rule_sets(payload)
    recorded = payload.get("observation_layout")
    counters = payload.get("counters") if isinstance(payload.get("counters"), dict) else {}
    exported = payload.get("exported") if isinstance(payload.get("exported"), dict) else {}
    started = exported.get("started_from") if isinstance(exported.get("started_from"), dict) else {}
    decisions = counters.get("decisions", exported.get("decisions", started.get("decisions", 0)))
    return {
        "format": ONNX_FORMAT,
        "observation_layout_version": str(LAYOUT_VERSION),
        "observation_layout": json.dumps(observation_layout()),
        "observation_size": str(OBSERVATION_SIZE),
        "num_actions": str(NUM_ACTIONS),
        "action_texts": json.dumps([action_to_str(action) for action in range(NUM_ACTIONS)]),
        "rules": json.dumps([asdict(rules) for rules in rule_sets]),
        "table_sizes": ",".join(str(size) for size in sorted({rules.num_players for rules in rule_sets})),
        "outputs": ",".join(OUTPUT_NAMES if has_value_output(network) else OUTPUT_NAMES[:1]),
        "network": json.dumps(network.shape.to_dict()),
        "source": source,
        "source_layout_version": str(recorded_layout_version(recorded) if recorded is not None else 1),
        "decisions": str(decisions if isinstance(decisions, int) and not isinstance(decisions, bool) else 0),
        "train_config": json.dumps(payload.get("config", {}), default=str, sort_keys=True),
        "exported": json.dumps(exported, default=str, sort_keys=True),
    }


def onnx_policy_bytes(network: ActorCritic, metadata: dict[str, str]) -> bytes:
    """The serialized ONNX model of ``network`` (the module docstring's graph) with ``metadata`` as its
    ``metadata_props``; checked by onnx's checker. Needs the ``onnx`` package (the ``onnx`` extra)."""
    import onnx

    graph = PolicyGraph(network).eval()
    example = (torch.zeros(2, network.shape.observation_size), torch.ones(2, network.shape.num_actions, dtype=bool))
    outputs = list(OUTPUT_NAMES if graph.with_value else OUTPUT_NAMES[:1])
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # The TorchScript exporter (dynamo=False) needs no package beyond onnx; torch 2.9+ warns it is the legacy
        # one. The torch.export-based exporter would need onnxscript for a graph of Gemm, Relu and Where.
        warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export", category=Warning)
        warnings.filterwarnings("ignore", message="The feature will be removed", category=Warning)
        torch.onnx.export(
            graph,
            example,
            buffer,
            dynamo=False,
            input_names=list(INPUT_NAMES),
            output_names=outputs,
            dynamic_axes={name: {0: "batch"} for name in [*INPUT_NAMES, *outputs]},
            opset_version=OPSET,
        )
    model = onnx.load_model_from_string(buffer.getvalue())
    model.doc_string = (
        "A pedro-rl policy: observation (float32, batch x D, the env's uint8 observation unscaled) and action_mask "
        f"(bool, batch x {NUM_ACTIONS}) in; logits (masked at {MASKED_LOGIT:g}) and value out. Metadata: what it is."
    )
    for key, value in metadata.items():
        model.metadata_props.add(key=key, value=value)
    onnx.checker.check_model(model)
    return model.SerializeToString()
