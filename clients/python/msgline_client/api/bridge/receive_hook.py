from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.applied import Applied
from ...models.error import Error
from ...models.receive_hook_body import ReceiveHookBody
from ...types import UNSET, Response, Unset


def _get_kwargs(
    line_id: str,
    *,
    body: ReceiveHookBody,
    secret: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    params["secret"] = secret

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/messaging/bridge/hooks/{line_id}".format(
            line_id=quote(str(line_id), safe=""),
        ),
        "params": params,
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Applied | Error | None:
    if response.status_code == 200:
        response_200 = Applied.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 500:
        response_500 = Error.from_dict(response.json())

        return response_500

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Applied | Error]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    line_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ReceiveHookBody,
    secret: str | Unset = UNSET,
) -> Response[Applied | Error]:
    """A device's own webhook (a BlueBubbles Server, an Android gateway), registered there by msgline.

     Authenticated with the secret msgline put in the URL it registered (`?secret=`), or the
    device's own signature; not for API keys.

    Args:
        line_id (str):
        secret (str | Unset):
        body (ReceiveHookBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Applied | Error]
    """

    kwargs = _get_kwargs(
        line_id=line_id,
        body=body,
        secret=secret,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    line_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ReceiveHookBody,
    secret: str | Unset = UNSET,
) -> Applied | Error | None:
    """A device's own webhook (a BlueBubbles Server, an Android gateway), registered there by msgline.

     Authenticated with the secret msgline put in the URL it registered (`?secret=`), or the
    device's own signature; not for API keys.

    Args:
        line_id (str):
        secret (str | Unset):
        body (ReceiveHookBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Applied | Error
    """

    return sync_detailed(
        line_id=line_id,
        client=client,
        body=body,
        secret=secret,
    ).parsed


async def asyncio_detailed(
    line_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ReceiveHookBody,
    secret: str | Unset = UNSET,
) -> Response[Applied | Error]:
    """A device's own webhook (a BlueBubbles Server, an Android gateway), registered there by msgline.

     Authenticated with the secret msgline put in the URL it registered (`?secret=`), or the
    device's own signature; not for API keys.

    Args:
        line_id (str):
        secret (str | Unset):
        body (ReceiveHookBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Applied | Error]
    """

    kwargs = _get_kwargs(
        line_id=line_id,
        body=body,
        secret=secret,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    line_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ReceiveHookBody,
    secret: str | Unset = UNSET,
) -> Applied | Error | None:
    """A device's own webhook (a BlueBubbles Server, an Android gateway), registered there by msgline.

     Authenticated with the secret msgline put in the URL it registered (`?secret=`), or the
    device's own signature; not for API keys.

    Args:
        line_id (str):
        secret (str | Unset):
        body (ReceiveHookBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Applied | Error
    """

    return (
        await asyncio_detailed(
            line_id=line_id,
            client=client,
            body=body,
            secret=secret,
        )
    ).parsed
