from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.conversation_kind import ConversationKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="ListConversationDataItem")


@_attrs_define
class ListConversationDataItem:
    """
    Attributes:
        created_at (datetime.datetime):
        id (str): `conv_…`
        kind (ConversationKind):
        line_id (str):
        participants (list[str]): A group's members.
        contact_id (None | str | Unset): The other party of a direct conversation.
        group_state (None | str | Unset):
        last_message_at (datetime.datetime | None | Unset):
        name (None | str | Unset):
    """

    created_at: datetime.datetime
    id: str
    kind: ConversationKind
    line_id: str
    participants: list[str]
    contact_id: None | str | Unset = UNSET
    group_state: None | str | Unset = UNSET
    last_message_at: datetime.datetime | None | Unset = UNSET
    name: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = self.id

        kind = self.kind.value

        line_id = self.line_id

        participants = self.participants

        contact_id: None | str | Unset
        if isinstance(self.contact_id, Unset):
            contact_id = UNSET
        else:
            contact_id = self.contact_id

        group_state: None | str | Unset
        if isinstance(self.group_state, Unset):
            group_state = UNSET
        else:
            group_state = self.group_state

        last_message_at: None | str | Unset
        if isinstance(self.last_message_at, Unset):
            last_message_at = UNSET
        elif isinstance(self.last_message_at, datetime.datetime):
            last_message_at = self.last_message_at.isoformat()
        else:
            last_message_at = self.last_message_at

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "kind": kind,
                "line_id": line_id,
                "participants": participants,
            }
        )
        if contact_id is not UNSET:
            field_dict["contact_id"] = contact_id
        if group_state is not UNSET:
            field_dict["group_state"] = group_state
        if last_message_at is not UNSET:
            field_dict["last_message_at"] = last_message_at
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = d.pop("id")

        kind = ConversationKind(d.pop("kind"))

        line_id = d.pop("line_id")

        participants = cast(list[str], d.pop("participants"))

        def _parse_contact_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        contact_id = _parse_contact_id(d.pop("contact_id", UNSET))

        def _parse_group_state(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        group_state = _parse_group_state(d.pop("group_state", UNSET))

        def _parse_last_message_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_message_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_message_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        last_message_at = _parse_last_message_at(d.pop("last_message_at", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        list_conversation_data_item = cls(
            created_at=created_at,
            id=id,
            kind=kind,
            line_id=line_id,
            participants=participants,
            contact_id=contact_id,
            group_state=group_state,
            last_message_at=last_message_at,
            name=name,
        )

        list_conversation_data_item.additional_properties = d
        return list_conversation_data_item

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
