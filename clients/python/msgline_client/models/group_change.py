from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="GroupChange")


@_attrs_define
class GroupChange:
    """A change to a group after its creation.

    Attributes:
        add (list[str]):
        created_at (datetime.datetime):
        group_id (str):
        id (str): `gch_…`
        leave (bool): The line leaves the group.
        remove (list[str]):
        status (str): `pending`, `applied`, `failed` or `unknown`.
        updated_at (datetime.datetime):
        error (None | str | Unset):
        name (None | str | Unset): The new name (`""`: removed); `null` when the change left the name alone.
    """

    add: list[str]
    created_at: datetime.datetime
    group_id: str
    id: str
    leave: bool
    remove: list[str]
    status: str
    updated_at: datetime.datetime
    error: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        add = self.add

        created_at = self.created_at.isoformat()

        group_id = self.group_id

        id = self.id

        leave = self.leave

        remove = self.remove

        status = self.status

        updated_at = self.updated_at.isoformat()

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "add": add,
                "created_at": created_at,
                "group_id": group_id,
                "id": id,
                "leave": leave,
                "remove": remove,
                "status": status,
                "updated_at": updated_at,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        add = cast(list[str], d.pop("add"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        group_id = d.pop("group_id")

        id = d.pop("id")

        leave = d.pop("leave")

        remove = cast(list[str], d.pop("remove"))

        status = d.pop("status")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        group_change = cls(
            add=add,
            created_at=created_at,
            group_id=group_id,
            id=id,
            leave=leave,
            remove=remove,
            status=status,
            updated_at=updated_at,
            error=error,
            name=name,
        )

        group_change.additional_properties = d
        return group_change

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
