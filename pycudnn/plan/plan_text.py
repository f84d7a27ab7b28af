"""How a plan reads to a person: :meth:`Plan.describe`'s line and ``repr(plan)``, from the plan's
public state only."""

from __future__ import annotations

from typing import Any

__all__: list[str] = []


def describe_plan(plan: Any) -> str:  # a Plan (imported by it: no import back)
    """One readable line: engine, knobs, notes, workspace, graph and rewrite."""
    knobs = ", ".join(f"{k}={v}" for k, v in plan.knobs.items()) or "no knobs"
    notes = ", ".join(plan.numerical_notes + plan.behavior_notes) or "no notes"
    g = f"graph '{plan.graph.name}'" if plan.graph is not None else "no graph"
    text = (
        f"plan for {g}: engine {plan.engine_id} ({knobs}; {notes}), workspace "
        f"{plan.workspace_size} B, from {plan.source}"
    )
    return text + (f"; cuDNN was shown the {plan.rewrite}" if plan.rewrite else "")


def plan_repr(plan: Any) -> str:
    """What a user needs at a glance: graph, engine and knobs, where it runs, workspace, state."""
    parts = [f"graph '{plan.graph.name}'" if plan.graph is not None else "no graph"]
    knobs = ", ".join(f"{k}={v}" for k, v in plan.knobs.items())
    parts.append(f"engine {plan.engine_id}" + (f" ({knobs})" if knobs else ""))
    props = plan.device_properties
    if plan.device_id is not None:  # a GPU's plan (loaded with its properties, or run)
        parts.append(f"on device {plan.device_id}")
    elif props is not None:
        parts.append(f"for {props.device_name} (deviceless)")
    parts.append(f"workspace {getattr(plan, 'workspace_size', '?')} B")
    if plan.rewrite:
        parts.append(plan.rewrite)
    if plan.closed:
        parts.append("closed")
    return f"<pycudnn.Plan {', '.join(parts)}>"
