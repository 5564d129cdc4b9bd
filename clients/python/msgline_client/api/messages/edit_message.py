from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.edit_message import EditMessage
from ...models.error import Error
from ...models.message import Message
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: str,
    *,
    body: EditMessage,
    idempotency_key: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/messaging/messages/{id}/edit".format(
            id=quote(str(id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | Message | None:
    if response.status_code == 200:
        response_200 = Message.from_dict(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = Message.from_dict(response.json())

        return response_202

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Error.from_dict(response.json())

        return response_500

    if response.status_code == 502:
        response_502 = Error.from_dict(response.json())

        return response_502

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | Message]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    body: EditMessage,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Error | Message]:
    """Edit an iMessage msgline sent.

     Apple's limits: within 15 minutes of `sent_at`, at most 5 times. msgline asks the line and
    answers `200` with the message edited (`body`, `edited_at`, the earlier text in `edits`) and
    the event `messaging.message.edited`. Without an answer from the line in time it answers
    `202`: `action.status` is `unknown` until msgline has asked the line, which it never asks
    to edit again. Retry with the same `Idempotency-Key` to be safe.

    Args:
        id (str):
        idempotency_key (None | str | Unset):
        body (EditMessage): `POST /messages/{id}/edit`. Example: {'body': 'See you at 7 instead'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Message]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: AuthenticatedClient,
    body: EditMessage,
    idempotency_key: None | str | Unset = UNSET,
) -> Error | Message | None:
    """Edit an iMessage msgline sent.

     Apple's limits: within 15 minutes of `sent_at`, at most 5 times. msgline asks the line and
    answers `200` with the message edited (`body`, `edited_at`, the earlier text in `edits`) and
    the event `messaging.message.edited`. Without an answer from the line in time it answers
    `202`: `action.status` is `unknown` until msgline has asked the line, which it never asks
    to edit again. Retry with the same `Idempotency-Key` to be safe.

    Args:
        id (str):
        idempotency_key (None | str | Unset):
        body (EditMessage): `POST /messages/{id}/edit`. Example: {'body': 'See you at 7 instead'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Message
    """

    return sync_detailed(
        id=id,
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    body: EditMessage,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[Error | Message]:
    """Edit an iMessage msgline sent.

     Apple's limits: within 15 minutes of `sent_at`, at most 5 times. msgline asks the line and
    answers `200` with the message edited (`body`, `edited_at`, the earlier text in `edits`) and
    the event `messaging.message.edited`. Without an answer from the line in time it answers
    `202`: `action.status` is `unknown` until msgline has asked the line, which it never asks
    to edit again. Retry with the same `Idempotency-Key` to be safe.

    Args:
        id (str):
        idempotency_key (None | str | Unset):
        body (EditMessage): `POST /messages/{id}/edit`. Example: {'body': 'See you at 7 instead'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Message]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient,
    body: EditMessage,
    idempotency_key: None | str | Unset = UNSET,
) -> Error | Message | None:
    """Edit an iMessage msgline sent.

     Apple's limits: within 15 minutes of `sent_at`, at most 5 times. msgline asks the line and
    answers `200` with the message edited (`body`, `edited_at`, the earlier text in `edits`) and
    the event `messaging.message.edited`. Without an answer from the line in time it answers
    `202`: `action.status` is `unknown` until msgline has asked the line, which it never asks
    to edit again. Retry with the same `Idempotency-Key` to be safe.

    Args:
        id (str):
        idempotency_key (None | str | Unset):
        body (EditMessage): `POST /messages/{id}/edit`. Example: {'body': 'See you at 7 instead'}.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Message
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
