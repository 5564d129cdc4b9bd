from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ListOptOutDataItem")


@_attrs_define
class ListOptOutDataItem:
    """A number that opted out of the organisation's messages on a line.

    Attributes:
        contact_id (str): `ct_…`
        id (str): `opt_…`
        keyword (str): The word it texted, in lower case: `stop`, `stopall`, `unsubscribe`, `cancel`, `end` or `quit`.
        line_id (str):
        opted_out_at (datetime.datetime):
        phone (str):
    """

    contact_id: str
    id: str
    keyword: str
    line_id: str
    opted_out_at: datetime.datetime
    phone: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        contact_id = self.contact_id

        id = self.id

        keyword = self.keyword

        line_id = self.line_id

        opted_out_at = self.opted_out_at.isoformat()

        phone = self.phone

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "contact_id": contact_id,
                "id": id,
                "keyword": keyword,
                "line_id": line_id,
                "opted_out_at": opted_out_at,
                "phone": phone,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        contact_id = d.pop("contact_id")

        id = d.pop("id")

        keyword = d.pop("keyword")

        line_id = d.pop("line_id")

        opted_out_at = datetime.datetime.fromisoformat(d.pop("opted_out_at"))

        phone = d.pop("phone")

        list_opt_out_data_item = cls(
            contact_id=contact_id,
            id=id,
            keyword=keyword,
            line_id=line_id,
            opted_out_at=opted_out_at,
            phone=phone,
        )

        list_opt_out_data_item.additional_properties = d
        return list_opt_out_data_item

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
