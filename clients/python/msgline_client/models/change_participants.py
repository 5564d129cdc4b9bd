from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ChangeParticipants")


@_attrs_define
class ChangeParticipants:
    """`POST /groups/{id}/participants`.

    Example:
        {'add': ['+12015550125'], 'remove': ['+12015550124']}

    Attributes:
        add (list[str] | None | Unset): Numbers to add, E.164 (national with `default_country`).
        default_country (None | str | Unset): For national-format numbers.
        idempotency_key (None | str | Unset): The same as the `Idempotency-Key` header.
        remove (list[str] | None | Unset): Numbers to remove.
    """

    add: list[str] | None | Unset = UNSET
    default_country: None | str | Unset = UNSET
    idempotency_key: None | str | Unset = UNSET
    remove: list[str] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        add: list[str] | None | Unset
        if isinstance(self.add, Unset):
            add = UNSET
        elif isinstance(self.add, list):
            add = self.add

        else:
            add = self.add

        default_country: None | str | Unset
        if isinstance(self.default_country, Unset):
            default_country = UNSET
        else:
            default_country = self.default_country

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        remove: list[str] | None | Unset
        if isinstance(self.remove, Unset):
            remove = UNSET
        elif isinstance(self.remove, list):
            remove = self.remove

        else:
            remove = self.remove

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if add is not UNSET:
            field_dict["add"] = add
        if default_country is not UNSET:
            field_dict["default_country"] = default_country
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if remove is not UNSET:
            field_dict["remove"] = remove

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_add(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                add_type_0 = cast(list[str], data)

                return add_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        add = _parse_add(d.pop("add", UNSET))

        def _parse_default_country(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        default_country = _parse_default_country(d.pop("default_country", UNSET))

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        def _parse_remove(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                remove_type_0 = cast(list[str], data)

                return remove_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        remove = _parse_remove(d.pop("remove", UNSET))

        change_participants = cls(
            add=add,
            default_country=default_country,
            idempotency_key=idempotency_key,
            remove=remove,
        )

        change_participants.additional_properties = d
        return change_participants

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
