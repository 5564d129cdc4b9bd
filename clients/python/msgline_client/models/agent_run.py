from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.tool_call import ToolCall


T = TypeVar("T", bound="AgentRun")


@_attrs_define
class AgentRun:
    """One run of an agent on an inbound message, with its tool calls.

    Attributes:
        agent_id (str):
        attempts (int):
        conversation_id (str):
        created_at (datetime.datetime):
        id (str): `run_…`
        state (str): `pending`, `running`, `done`, `failed` or `skipped`.
        tool_calls (list[ToolCall]):
        trigger_message_id (str):
        error (None | str | Unset):
        finished_at (datetime.datetime | None | Unset):
        outcome (None | str | Unset):
    """

    agent_id: str
    attempts: int
    conversation_id: str
    created_at: datetime.datetime
    id: str
    state: str
    tool_calls: list[ToolCall]
    trigger_message_id: str
    error: None | str | Unset = UNSET
    finished_at: datetime.datetime | None | Unset = UNSET
    outcome: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        agent_id = self.agent_id

        attempts = self.attempts

        conversation_id = self.conversation_id

        created_at = self.created_at.isoformat()

        id = self.id

        state = self.state

        tool_calls = []
        for tool_calls_item_data in self.tool_calls:
            tool_calls_item = tool_calls_item_data.to_dict()
            tool_calls.append(tool_calls_item)

        trigger_message_id = self.trigger_message_id

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        outcome: None | str | Unset
        if isinstance(self.outcome, Unset):
            outcome = UNSET
        else:
            outcome = self.outcome

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "agent_id": agent_id,
                "attempts": attempts,
                "conversation_id": conversation_id,
                "created_at": created_at,
                "id": id,
                "state": state,
                "tool_calls": tool_calls,
                "trigger_message_id": trigger_message_id,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if outcome is not UNSET:
            field_dict["outcome"] = outcome

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tool_call import ToolCall  # noqa: PLC0415

        d = dict(src_dict)
        agent_id = d.pop("agent_id")

        attempts = d.pop("attempts")

        conversation_id = d.pop("conversation_id")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = d.pop("id")

        state = d.pop("state")

        tool_calls = []
        _tool_calls = d.pop("tool_calls")
        for tool_calls_item_data in _tool_calls:
            tool_calls_item = ToolCall.from_dict(tool_calls_item_data)

            tool_calls.append(tool_calls_item)

        trigger_message_id = d.pop("trigger_message_id")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_finished_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        def _parse_outcome(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        outcome = _parse_outcome(d.pop("outcome", UNSET))

        agent_run = cls(
            agent_id=agent_id,
            attempts=attempts,
            conversation_id=conversation_id,
            created_at=created_at,
            id=id,
            state=state,
            tool_calls=tool_calls,
            trigger_message_id=trigger_message_id,
            error=error,
            finished_at=finished_at,
            outcome=outcome,
        )

        agent_run.additional_properties = d
        return agent_run

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
