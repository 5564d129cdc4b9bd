from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.group import Group
    from ..models.message import Message


T = TypeVar("T", bound="GroupCreated")


@_attrs_define
class GroupCreated:
    """The answer to a group creation.

    Attributes:
        delivery_unknown (bool):
        duplicate (bool):
        group (Group): An iMessage group chat (a conversation of kind `group`).
        message (Message): A message, outbound or inbound. A contact card, a poll and a poll vote add their object.
    """

    delivery_unknown: bool
    duplicate: bool
    group: Group
    message: Message
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        delivery_unknown = self.delivery_unknown

        duplicate = self.duplicate

        group = self.group.to_dict()

        message = self.message.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "delivery_unknown": delivery_unknown,
                "duplicate": duplicate,
                "group": group,
                "message": message,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.group import Group  # noqa: PLC0415
        from ..models.message import Message  # noqa: PLC0415

        d = dict(src_dict)
        delivery_unknown = d.pop("delivery_unknown")

        duplicate = d.pop("duplicate")

        group = Group.from_dict(d.pop("group"))

        message = Message.from_dict(d.pop("message"))

        group_created = cls(
            delivery_unknown=delivery_unknown,
            duplicate=duplicate,
            group=group,
            message=message,
        )

        group_created.additional_properties = d
        return group_created

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
