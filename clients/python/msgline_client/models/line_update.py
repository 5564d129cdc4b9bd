from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.line_policy import LinePolicy


T = TypeVar("T", bound="LineUpdate")


@_attrs_define
class LineUpdate:
    """`PATCH /lines/{id}`: the limits to change (a number sets, `null` removes, a field left out
    keeps its value).

        Example:
            {'policy': {'max_new_contacts_per_month': None, 'max_per_day': 500, 'min_gap_ms': 3000}}

        Attributes:
            policy (LinePolicy): A line's sending policy: each a limit, or `null` for none.
    """

    policy: LinePolicy
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        policy = self.policy.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "policy": policy,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.line_policy import LinePolicy  # noqa: PLC0415

        d = dict(src_dict)
        policy = LinePolicy.from_dict(d.pop("policy"))

        line_update = cls(
            policy=policy,
        )

        line_update.additional_properties = d
        return line_update

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
