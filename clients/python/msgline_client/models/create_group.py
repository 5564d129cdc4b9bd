from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="CreateGroup")


@_attrs_define
class CreateGroup:
    """`POST /groups`.

    Example:
        {'body': 'Hi all', 'name': 'Weekend trip', 'participants': ['+12015550123', '+12015550124']}

    Attributes:
        body (None | str): The opening message, 1 to 10,000 characters.
        participants (list[str] | None): 2 to 31 distinct numbers, E.164 (national with `default_country`).
        default_country (None | str | Unset): For national-format participants.
        from_ (None | str | Unset): The line, by its number.
        idempotency_key (None | str | Unset): The same as the `Idempotency-Key` header.
        line_e164 (None | str | Unset): The same as `from`.
        line_id (None | str | Unset): The dedicated line that creates the group.
        name (None | str | Unset): The group's display name, up to 100 characters.
    """

    body: None | str
    participants: list[str] | None
    default_country: None | str | Unset = UNSET
    from_: None | str | Unset = UNSET
    idempotency_key: None | str | Unset = UNSET
    line_e164: None | str | Unset = UNSET
    line_id: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        body: None | str
        body = self.body

        participants: list[str] | None
        if isinstance(self.participants, list):
            participants = self.participants

        else:
            participants = self.participants

        default_country: None | str | Unset
        if isinstance(self.default_country, Unset):
            default_country = UNSET
        else:
            default_country = self.default_country

        from_: None | str | Unset
        if isinstance(self.from_, Unset):
            from_ = UNSET
        else:
            from_ = self.from_

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        line_e164: None | str | Unset
        if isinstance(self.line_e164, Unset):
            line_e164 = UNSET
        else:
            line_e164 = self.line_e164

        line_id: None | str | Unset
        if isinstance(self.line_id, Unset):
            line_id = UNSET
        else:
            line_id = self.line_id

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "body": body,
                "participants": participants,
            }
        )
        if default_country is not UNSET:
            field_dict["default_country"] = default_country
        if from_ is not UNSET:
            field_dict["from"] = from_
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if line_e164 is not UNSET:
            field_dict["line_e164"] = line_e164
        if line_id is not UNSET:
            field_dict["line_id"] = line_id
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_body(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        body = _parse_body(d.pop("body"))

        def _parse_participants(data: object) -> list[str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                participants_type_0 = cast(list[str], data)

                return participants_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None, data)

        participants = _parse_participants(d.pop("participants"))

        def _parse_default_country(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        default_country = _parse_default_country(d.pop("default_country", UNSET))

        def _parse_from_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_ = _parse_from_(d.pop("from", UNSET))

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        def _parse_line_e164(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        line_e164 = _parse_line_e164(d.pop("line_e164", UNSET))

        def _parse_line_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        line_id = _parse_line_id(d.pop("line_id", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        create_group = cls(
            body=body,
            participants=participants,
            default_country=default_country,
            from_=from_,
            idempotency_key=idempotency_key,
            line_e164=line_e164,
            line_id=line_id,
            name=name,
        )

        create_group.additional_properties = d
        return create_group

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
