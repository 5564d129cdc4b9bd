from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.tally_entry import TallyEntry


T = TypeVar("T", bound="Poll")


@_attrs_define
class Poll:
    """A poll with its tally.

    Attributes:
        conversation_id (str):
        created_at (datetime.datetime):
        id (str): `poll_…`
        line_id (str):
        message_id (str):
        options (list[str]):
        question (str):
        tally (list[TallyEntry]):
        total_votes (int):
        closed_at (datetime.datetime | None | Unset): When the poll stopped taking votes (its window ended, or a newer
            poll in its
            conversation was sent); `null` while it is open.
    """

    conversation_id: str
    created_at: datetime.datetime
    id: str
    line_id: str
    message_id: str
    options: list[str]
    question: str
    tally: list[TallyEntry]
    total_votes: int
    closed_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        conversation_id = self.conversation_id

        created_at = self.created_at.isoformat()

        id = self.id

        line_id = self.line_id

        message_id = self.message_id

        options = self.options

        question = self.question

        tally = []
        for tally_item_data in self.tally:
            tally_item = tally_item_data.to_dict()
            tally.append(tally_item)

        total_votes = self.total_votes

        closed_at: None | str | Unset
        if isinstance(self.closed_at, Unset):
            closed_at = UNSET
        elif isinstance(self.closed_at, datetime.datetime):
            closed_at = self.closed_at.isoformat()
        else:
            closed_at = self.closed_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "conversation_id": conversation_id,
                "created_at": created_at,
                "id": id,
                "line_id": line_id,
                "message_id": message_id,
                "options": options,
                "question": question,
                "tally": tally,
                "total_votes": total_votes,
            }
        )
        if closed_at is not UNSET:
            field_dict["closed_at"] = closed_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tally_entry import TallyEntry  # noqa: PLC0415

        d = dict(src_dict)
        conversation_id = d.pop("conversation_id")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = d.pop("id")

        line_id = d.pop("line_id")

        message_id = d.pop("message_id")

        options = cast(list[str], d.pop("options"))

        question = d.pop("question")

        tally = []
        _tally = d.pop("tally")
        for tally_item_data in _tally:
            tally_item = TallyEntry.from_dict(tally_item_data)

            tally.append(tally_item)

        total_votes = d.pop("total_votes")

        def _parse_closed_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                closed_at_type_0 = datetime.datetime.fromisoformat(data)

                return closed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        closed_at = _parse_closed_at(d.pop("closed_at", UNSET))

        poll = cls(
            conversation_id=conversation_id,
            created_at=created_at,
            id=id,
            line_id=line_id,
            message_id=message_id,
            options=options,
            question=question,
            tally=tally,
            total_votes=total_votes,
            closed_at=closed_at,
        )

        poll.additional_properties = d
        return poll

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
