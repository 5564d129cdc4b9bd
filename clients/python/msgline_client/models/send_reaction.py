from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.tapback import Tapback
from ..types import UNSET, Unset

T = TypeVar("T", bound="SendReaction")


@_attrs_define
class SendReaction:
    """`POST /messages/{id}/reactions`.

    Example:
        {'reaction': 'love'}

    Attributes:
        reaction (None | Tapback):
        idempotency_key (None | str | Unset): The same as the `Idempotency-Key` header (both given and different: 400).
    """

    reaction: None | Tapback
    idempotency_key: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        reaction: None | str
        if isinstance(self.reaction, Tapback):
            reaction = self.reaction.value
        else:
            reaction = self.reaction

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "reaction": reaction,
            }
        )
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_reaction(data: object) -> None | Tapback:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                reaction_type_1 = Tapback(data)

                return reaction_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Tapback, data)

        reaction = _parse_reaction(d.pop("reaction"))

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        send_reaction = cls(
            reaction=reaction,
            idempotency_key=idempotency_key,
        )

        send_reaction.additional_properties = d
        return send_reaction

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
