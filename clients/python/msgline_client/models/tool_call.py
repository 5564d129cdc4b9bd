from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.tool_call_arguments import ToolCallArguments
    from ..models.tool_call_result import ToolCallResult


T = TypeVar("T", bound="ToolCall")


@_attrs_define
class ToolCall:
    """
    Attributes:
        arguments (ToolCallArguments): The arguments the model gave, as JSON.
        call_id (str):
        created_at (datetime.datetime):
        result (ToolCallResult):
        seq (int):
        status (str): `ok` or `error`.
        tool (str):
        message_id (None | str | Unset):
    """

    arguments: ToolCallArguments
    call_id: str
    created_at: datetime.datetime
    result: ToolCallResult
    seq: int
    status: str
    tool: str
    message_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        arguments = self.arguments.to_dict()

        call_id = self.call_id

        created_at = self.created_at.isoformat()

        result = self.result.to_dict()

        seq = self.seq

        status = self.status

        tool = self.tool

        message_id: None | str | Unset
        if isinstance(self.message_id, Unset):
            message_id = UNSET
        else:
            message_id = self.message_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "arguments": arguments,
                "call_id": call_id,
                "created_at": created_at,
                "result": result,
                "seq": seq,
                "status": status,
                "tool": tool,
            }
        )
        if message_id is not UNSET:
            field_dict["message_id"] = message_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tool_call_arguments import ToolCallArguments  # noqa: PLC0415
        from ..models.tool_call_result import ToolCallResult  # noqa: PLC0415

        d = dict(src_dict)
        arguments = ToolCallArguments.from_dict(d.pop("arguments"))

        call_id = d.pop("call_id")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        result = ToolCallResult.from_dict(d.pop("result"))

        seq = d.pop("seq")

        status = d.pop("status")

        tool = d.pop("tool")

        def _parse_message_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        message_id = _parse_message_id(d.pop("message_id", UNSET))

        tool_call = cls(
            arguments=arguments,
            call_id=call_id,
            created_at=created_at,
            result=result,
            seq=seq,
            status=status,
            tool=tool,
            message_id=message_id,
        )

        tool_call.additional_properties = d
        return tool_call

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
