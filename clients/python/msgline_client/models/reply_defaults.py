from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ReplyDefaults")


@_attrs_define
class ReplyDefaults:
    """Which of the replies are msgline's defaults.

    Attributes:
        help_reply (bool):
        opt_in_reply (bool):
        opt_out_reply (bool):
    """

    help_reply: bool
    opt_in_reply: bool
    opt_out_reply: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        help_reply = self.help_reply

        opt_in_reply = self.opt_in_reply

        opt_out_reply = self.opt_out_reply

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "help_reply": help_reply,
                "opt_in_reply": opt_in_reply,
                "opt_out_reply": opt_out_reply,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        help_reply = d.pop("help_reply")

        opt_in_reply = d.pop("opt_in_reply")

        opt_out_reply = d.pop("opt_out_reply")

        reply_defaults = cls(
            help_reply=help_reply,
            opt_in_reply=opt_in_reply,
            opt_out_reply=opt_out_reply,
        )

        reply_defaults.additional_properties = d
        return reply_defaults

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
