"""A Python client of the cluster model (cli/tests/model/cluster/python.rs).

    python client.py URL NAME BATCH MODE < items

Opens the filter NAME at URL by name and sends the items of standard input
through ``check_and_insert_many``, BATCH at a time: MODE ``sync`` one batch
after another with the blocking class, stopping at the first that fails;
``aio`` every batch at once, two in flight, on the asyncio class. Standard
output: one line per answered or failed item, ``new ITEM`` (answered new),
``unknown ITEM`` (its reply lost: written or not) or ``refused ITEM`` (not
written); nothing for an item answered seen or never sent. A failure is
said on standard error as ``rotabloom: CLASS: MESSAGE``, and the exit code
is then 3.
"""

import asyncio
import sys

import rotabloom
from rotabloom import aio, errors

# The errors after which nothing of the batch was written: a refusal by
# the filter or the server, or a handle whose filter is gone.
NOTHING_WRITTEN = (
    errors.LimitReachedError,  # FullError too
    errors.OutOfMemoryError,
    errors.NotFoundError,
    errors.RecreatedError,
    errors.MissingDataError,
    errors.CorruptMetadataError,
)


def failed(chunk, e):
    """Says what a failed batch did to each of its items."""
    if isinstance(e, errors.FullError) and e.answered is not None:
        # The items handled before the generation filled were written.
        for item, answer in zip(chunk, e.answered):
            if answer:
                print("new", item)
        for item in chunk[len(e.answered) :]:
            print("refused", item)
    elif isinstance(e, errors.PartialError):
        for item, answer in zip(chunk, e.answers):
            if answer:
                print("new", item)
        for i in e.unknown:
            print("unknown", chunk[i])
        for i in e.refused:
            print("refused", chunk[i])
    else:
        fate = "refused" if isinstance(e, NOTHING_WRITTEN) else "unknown"
        for item in chunk:
            print(fate, item)
    print(f"rotabloom: {type(e).__name__}: {e}", file=sys.stderr)


def answered(chunk, answers):
    for item, answer in zip(chunk, answers):
        if answer:
            print("new", item)


def run_sync(url, name, chunks):
    try:
        f = rotabloom.open_filter(url, name)
    except errors.RotabloomError as e:
        print(f"rotabloom: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    for chunk in chunks:
        try:
            answers = f.check_and_insert_many(chunk)
        except errors.RotabloomError as e:
            failed(chunk, e)
            return 3
        answered(chunk, answers)
    return 0


async def run_aio(url, name, chunks):
    try:
        f = await aio.open_filter(url, name)
    except errors.RotabloomError as e:
        print(f"rotabloom: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    gate = asyncio.Semaphore(2)

    async def one(chunk):
        async with gate:
            return await f.check_and_insert_many(chunk)

    results = await asyncio.gather(*(one(c) for c in chunks), return_exceptions=True)
    code = 0
    for chunk, result in zip(chunks, results):
        if isinstance(result, errors.RotabloomError):
            failed(chunk, result)
            code = 3
        elif isinstance(result, BaseException):
            raise result
        else:
            answered(chunk, result)
    return code


def main():
    url, name, batch, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    items = [line.rstrip("\n") for line in sys.stdin if line.strip()]
    chunks = [items[i : i + batch] for i in range(0, len(items), batch)]
    if mode == "aio":
        code = asyncio.run(run_aio(url, name, chunks))
    else:
        code = run_sync(url, name, chunks)
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
