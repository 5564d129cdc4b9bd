from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.group import Group


T = TypeVar("T", bound="GroupRefused")


@_attrs_define
class GroupRefused:
    """The line refused the group or could not be reached: the error, the failed group and its
    opening message's id.

        Attributes:
            error (str): `line_rejected` or `line_unavailable`.
            group (Group): An iMessage group chat (a conversation of kind `group`).
            message_id (str):
            message (None | str | Unset):
    """

    error: str
    group: Group
    message_id: str
    message: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        error = self.error

        group = self.group.to_dict()

        message_id = self.message_id

        message: None | str | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        else:
            message = self.message

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "error": error,
                "group": group,
                "message_id": message_id,
            }
        )
        if message is not UNSET:
            field_dict["message"] = message

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.group import Group  # noqa: PLC0415

        d = dict(src_dict)
        error = d.pop("error")

        group = Group.from_dict(d.pop("group"))

        message_id = d.pop("message_id")

        def _parse_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        group_refused = cls(
            error=error,
            group=group,
            message_id=message_id,
            message=message,
        )

        group_refused.additional_properties = d
        return group_refused

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
