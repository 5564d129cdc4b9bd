from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="UpdateWebhook")


@_attrs_define
class UpdateWebhook:
    """`PATCH /webhooks/{id}`.

    Attributes:
        enabled (bool | None | Unset): `false` stops deliveries to the endpoint (`disabled_reason: manual`; its waiting
            deliveries are given up); `true` starts them again from the next event. Events of the time
            it was disabled reach it only through a replay. Required.
    """

    enabled: bool | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        enabled: bool | None | Unset
        if isinstance(self.enabled, Unset):
            enabled = UNSET
        else:
            enabled = self.enabled

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if enabled is not UNSET:
            field_dict["enabled"] = enabled

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_enabled(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        enabled = _parse_enabled(d.pop("enabled", UNSET))

        update_webhook = cls(
            enabled=enabled,
        )

        return update_webhook
