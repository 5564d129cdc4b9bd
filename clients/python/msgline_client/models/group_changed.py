from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.group import Group
    from ..models.group_change import GroupChange


T = TypeVar("T", bound="GroupChanged")


@_attrs_define
class GroupChanged:
    """A group change's answer: the group as it now is, and the change.

    Attributes:
        change (GroupChange): A change to a group after its creation.
        duplicate (bool):
        group (Group): An iMessage group chat (a conversation of kind `group`).
    """

    change: GroupChange
    duplicate: bool
    group: Group
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        change = self.change.to_dict()

        duplicate = self.duplicate

        group = self.group.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "change": change,
                "duplicate": duplicate,
                "group": group,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.group import Group  # noqa: PLC0415
        from ..models.group_change import GroupChange  # noqa: PLC0415

        d = dict(src_dict)
        change = GroupChange.from_dict(d.pop("change"))

        duplicate = d.pop("duplicate")

        group = Group.from_dict(d.pop("group"))

        group_changed = cls(
            change=change,
            duplicate=duplicate,
            group=group,
        )

        group_changed.additional_properties = d
        return group_changed

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
