from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.direction import Direction
from ...models.error import Error
from ...models.list_message import ListMessage
from ...models.message_status import MessageStatus
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    conversation_id: str | Unset = UNSET,
    contact_id: str | Unset = UNSET,
    direction: Direction | Unset = UNSET,
    status: MessageStatus | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["conversation_id"] = conversation_id

    params["contact_id"] = contact_id

    json_direction: str | Unset = UNSET
    if not isinstance(direction, Unset):
        json_direction = direction.value

    params["direction"] = json_direction

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    params["limit"] = limit

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/messaging/messages",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | ListMessage | None:
    if response.status_code == 200:
        response_200 = ListMessage.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Error.from_dict(response.json())

        return response_500

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Error | ListMessage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    conversation_id: str | Unset = UNSET,
    contact_id: str | Unset = UNSET,
    direction: Direction | Unset = UNSET,
    status: MessageStatus | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[Error | ListMessage]:
    """List messages, newest first.

    Args:
        conversation_id (str | Unset):
        contact_id (str | Unset):
        direction (Direction | Unset):
        status (MessageStatus | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListMessage]
    """

    kwargs = _get_kwargs(
        conversation_id=conversation_id,
        contact_id=contact_id,
        direction=direction,
        status=status,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    conversation_id: str | Unset = UNSET,
    contact_id: str | Unset = UNSET,
    direction: Direction | Unset = UNSET,
    status: MessageStatus | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Error | ListMessage | None:
    """List messages, newest first.

    Args:
        conversation_id (str | Unset):
        contact_id (str | Unset):
        direction (Direction | Unset):
        status (MessageStatus | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListMessage
    """

    return sync_detailed(
        client=client,
        conversation_id=conversation_id,
        contact_id=contact_id,
        direction=direction,
        status=status,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    conversation_id: str | Unset = UNSET,
    contact_id: str | Unset = UNSET,
    direction: Direction | Unset = UNSET,
    status: MessageStatus | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[Error | ListMessage]:
    """List messages, newest first.

    Args:
        conversation_id (str | Unset):
        contact_id (str | Unset):
        direction (Direction | Unset):
        status (MessageStatus | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListMessage]
    """

    kwargs = _get_kwargs(
        conversation_id=conversation_id,
        contact_id=contact_id,
        direction=direction,
        status=status,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    conversation_id: str | Unset = UNSET,
    contact_id: str | Unset = UNSET,
    direction: Direction | Unset = UNSET,
    status: MessageStatus | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Error | ListMessage | None:
    """List messages, newest first.

    Args:
        conversation_id (str | Unset):
        contact_id (str | Unset):
        direction (Direction | Unset):
        status (MessageStatus | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListMessage
    """

    return (
        await asyncio_detailed(
            client=client,
            conversation_id=conversation_id,
            contact_id=contact_id,
            direction=direction,
            status=status,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
