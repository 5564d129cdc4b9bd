from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="LeaveGroup")


@_attrs_define
class LeaveGroup:
    """`POST /groups/{id}/leave` (the body is optional). Leaving cannot be undone, so a body with
    any field but `idempotency_key` is refused rather than ignored.

        Attributes:
            idempotency_key (None | str | Unset): The same as the `Idempotency-Key` header.
    """

    idempotency_key: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        leave_group = cls(
            idempotency_key=idempotency_key,
        )

        return leave_group
