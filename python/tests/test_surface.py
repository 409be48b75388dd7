"""What the Python surface promises: every setting of the library as a
keyword, parsed by the library's own parsers; docstrings and type stubs
that list them; dicts with the command line's field names, typed; and a
Python exception for every error."""

import ast
import inspect
import os
import typing
from datetime import datetime, timezone

import pytest
import redis

import rotabloom
from rotabloom import _rotabloom, errors
from rotabloom import keywords as keywords_module
from rotabloom.info import FilterInfo, GenerationInfo, RotationResult, WarningInfo

CLASSES = {
    "bloom": rotabloom.BloomFilter,
    "expanding": rotabloom.ExpandingFilter,
    "circular": rotabloom.CircularFilter,
}
DAY = 86400.0


def test_settings_are_parsed_as_the_command_line_parses_them(redis_url):
    f = rotabloom.BloomFilter(redis_url, "text", capacity="10M", error_rate="0.1%")
    p = f.info()["parameters"]
    assert p["capacity"] == 10_000_000 and p["error_rate"] == 0.001
    e = rotabloom.ExpandingFilter(
        redis_url, "text-exp", capacity="1e6", max_bytes="4GiB", growth="4", max_generations="8"
    )
    p = e.info()["parameters"]
    assert (p["capacity"], p["max_bytes"], p["growth"], p["max_generations"]) == (
        1_000_000, 4 << 30, 4, 8)
    c = rotabloom.CircularFilter(
        redis_url, "text-circ", generations="3", capacity="2.5k", schedule="12h", lazy=True
    )
    p = c.info()["parameters"]
    assert (p["generations"], p["capacity"], p["schedule"], p["lazy"]) == (3, 2500, "12h", True)
    # The same values as numbers make the same filter.
    same = rotabloom.BloomFilter(redis_url, "text", capacity=10_000_000, error_rate=0.001)
    assert same.info()["parameters"] == f.info()["parameters"]


@pytest.mark.parametrize(
    "kwargs, setting",
    [
        ({"capacity": "lots"}, "capacity"),
        ({"capacity": "1.5"}, "capacity"),
        ({"capacity": 1000, "error_rate": "low"}, "error_rate"),
        ({"capacity": 1000, "error_rate": "150%"}, "error_rate"),
        ({"capacity": 1000, "max_bits": "-3"}, "max_bits"),
    ],
)
def test_bad_text_names_the_setting(redis_url, kwargs, setting):
    with pytest.raises(errors.InvalidParameterError) as e:
        rotabloom.BloomFilter(redis_url, "bad-text", **kwargs)
    assert e.value.setting == setting
    assert setting in str(e.value)


def test_the_default_error_rate_is_the_command_lines(redis_url):
    f = rotabloom.ExpandingFilter(redis_url, "default-rate", capacity=1000)
    assert f.info()["parameters"]["error_rate"] == 0.01


def test_expanding_filters_take_a_backend(redis_url):
    # The plain server has no RedisBloom: the setting reached the library
    # (before, the class refused the keyword with a TypeError).
    with pytest.raises(errors.ModuleMissingError):
        rotabloom.ExpandingFilter(redis_url, "rb", capacity=1000, backend="redisbloom")
    with pytest.raises(errors.InvalidParameterError):
        rotabloom.ExpandingFilter(redis_url, "rb", capacity=1000, backend="floppy")
    f = rotabloom.ExpandingFilter(redis_url, "rb", capacity=1000, backend="bitmap")
    assert f.add("a")


@pytest.mark.parametrize("kind", sorted(CLASSES))
def test_a_keyword_of_another_kind_or_a_typo_is_a_type_error(redis_url, kind):
    others = {k for other in CLASSES for k in _rotabloom.keywords(other)} - set(
        _rotabloom.keywords(kind))
    for keyword in sorted(others) + ["capasity"]:
        with pytest.raises(TypeError) as e:
            CLASSES[kind](redis_url, "typo", capacity=1000, **{keyword: "1"})
        assert repr(keyword) in str(e.value) or f'"{keyword}"' in str(e.value)
    with pytest.raises(TypeError):
        rotabloom.BloomFilter(redis_url, "typo", capacity=[1000])


SETTINGS = {
    "bloom": keywords_module.BloomSettings,
    "expanding": keywords_module.ExpandingSettings,
    "circular": keywords_module.CircularSettings,
}


def _stub_signatures():
    """For each method of each class in the type stubs: its keyword-only
    parameters, and the TypedDict its ``**`` parameter unpacks."""
    stub = os.path.join(os.path.dirname(rotabloom.__file__), "_rotabloom.pyi")
    out = {}
    for node in ast.parse(open(stub).read()).body:
        if isinstance(node, ast.ClassDef):
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef):
                    kwarg = fn.args.kwarg
                    unpacked = None
                    if kwarg is not None and isinstance(kwarg.annotation, ast.Subscript):
                        unpacked = ast.unparse(kwarg.annotation.slice)
                    out[(node.name, fn.name)] = ([a.arg for a in fn.args.kwonlyargs], unpacked)
    return out


@pytest.mark.parametrize("kind", sorted(CLASSES))
def test_every_keyword_is_documented_typed_and_taken(redis_url, kind):
    cls = CLASSES[kind]
    kws = _rotabloom.keywords(kind)
    # Every setting of the library's table that this kind takes.
    assert "capacity" in kws and "backend" in kws and "max_block_bits" in kws
    doc = cls.__doc__ + rotabloom.Filter.__doc__
    missing = [k for k in kws if f"``{k}``" not in doc]
    assert not missing, f"{cls.__name__}'s docstring lacks {missing}"
    typed = SETTINGS[kind]
    assert sorted(typed.__annotations__) == sorted(kws)
    stubs = _stub_signatures()
    assert stubs[(cls.__name__, "__init__")] == ([], typed.__name__)
    if kind == "expanding":
        assert stubs[("ExpandingFilter", "adopt_legacy")] == (
            ["bit", "hashes", "verify"], "ExpandingSettings")
    assert stubs[("Filter", "open")] == ([], "OpenKeywords")
    assert set(keywords_module.OpenKeywords.__annotations__) <= set(kws) | {"clock"}


def test_the_docstrings_say_what_a_full_filter_does():
    for cls in (rotabloom.BloomFilter, rotabloom.CircularFilter):
        assert "FullError" in cls.__doc__ and "when_full" in cls.__doc__
        assert "advisory" not in cls.__doc__
    assert "LimitReachedError" in rotabloom.ExpandingFilter.__doc__


def test_open_filter_has_type_hints():
    hints = typing.get_type_hints(rotabloom.open_filter)
    assert hints["url"] is str and hints["name"] is str and "when_full" in hints
    params = inspect.signature(rotabloom.open_filter).parameters
    assert set(params) - {"url", "name"} == set(keywords_module.OpenKeywords.__annotations__)


def _keys(typed_dict):
    assert typed_dict.__required_keys__ == set(typed_dict.__annotations__)
    return set(typed_dict.__annotations__)


def _check_types(typed_dict, value):
    for key, hint in typing.get_type_hints(typed_dict).items():
        origin = typing.get_origin(hint)
        if hint in (int, str, bool):
            assert type(value[key]) is hint, (key, value[key])
        elif hint is float:
            assert isinstance(value[key], (int, float)), (key, value[key])
        elif origin is typing.Literal:
            assert value[key] in typing.get_args(hint), (key, value[key])
        elif origin is typing.Union:
            assert value[key] is None or isinstance(value[key], str), (key, value[key])


def _rfc3339(text):
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text[:-1] + "+00:00")


def test_info_keys_are_the_typed_dicts_and_the_command_lines(redis_url):
    clock = rotabloom.ManualClock(20000 * DAY + 60)
    c = rotabloom.CircularFilter(redis_url, "vocab", generations=2, capacity=10, schedule="1d",
                                 clock=clock, when_full="warn")
    c.add_many([f"i{k}" for k in range(12)])  # over capacity: a warning
    info = c.info()
    assert set(info) == _keys(FilterInfo)
    _check_types(FilterInfo, info)
    assert info["items"] == 12 and info["capacity"] == sum(g["capacity"] for g in info["generations"])
    for g in info["generations"]:
        assert set(g) == _keys(GenerationInfo)
        _check_types(GenerationInfo, g)
        assert _rfc3339(g["created_at"]) == datetime.fromtimestamp(
            g["created_at_ms"] // 1000, timezone.utc)
    assert info["warnings"], "over capacity"
    for w in info["warnings"]:
        assert set(w) == _keys(WarningInfo)
        _check_types(WarningInfo, w)
    assert _rfc3339(info["created_at"]).timestamp() == info["created_at_ms"] // 1000
    assert info["next_rotation_at"] == c.next_rotation_at == "2024-10-05T00:00:00Z"
    assert "gens" not in info["parameters"] and "uid" not in info["parameters"]
    assert info["parameters"]["generations"] == 2 and info["parameters"]["lazy"] is False
    for f in (rotabloom.BloomFilter(redis_url, "vocab-b", capacity=10),
              rotabloom.ExpandingFilter(redis_url, "vocab-e", capacity=10)):
        i = f.info()
        assert set(i) == _keys(FilterInfo) and i["next_rotation_at"] is None


def test_rotation_results_are_the_typed_dict(redis_url):
    clock = rotabloom.ManualClock(20000 * DAY + 60)
    c = rotabloom.CircularFilter(redis_url, "rot", generations=3, capacity=10, schedule="1d",
                                 clock=clock)
    other = rotabloom.CircularFilter.open(redis_url, "rot", clock=clock)
    results = [c.rotate_if_due()]
    clock.advance(2 * DAY)
    results.append(c.rotate_if_due())
    results.append(c.rotate())
    results.append(other.rotate())  # other saw an older epoch: superseded
    assert [r["result"] for r in results] == ["not_due", "rotated", "rotated", "superseded"]
    assert [r["rotations"] for r in results] == [0, 2, 1, 0]
    assert [r["epoch"] for r in results] == [0, 2, 3, 3]
    for r in results:
        assert set(r) == _keys(RotationResult) and r["name"] == "rot"
        _check_types(RotationResult, r)
    assert results[1]["next_rotation_at"] == "2024-10-07T00:00:00Z"


def test_open_takes_a_clock_for_circular_filters_only(redis_url):
    clock = rotabloom.ManualClock(20000 * DAY + 60)
    rotabloom.CircularFilter(redis_url, "oc", generations=2, capacity=10, schedule="1d", clock=clock)
    f = rotabloom.open_filter(redis_url, "oc", clock=clock)
    clock.advance(DAY)
    assert f.rotate_if_due()["rotations"] == 1
    rotabloom.BloomFilter(redis_url, "ob", capacity=10)
    with pytest.raises(errors.InvalidParameterError):
        rotabloom.open_filter(redis_url, "ob", clock=clock)
    with pytest.raises(TypeError):
        rotabloom.Filter.open(redis_url, "ob", capacity=10)


def test_every_error_class_the_binding_raises_exists():
    for name in _rotabloom.error_classes():
        cls = getattr(errors, name)
        assert issubclass(cls, errors.RotabloomError)
        assert name in rotabloom.__all__
    assert issubclass(errors.FileAccessError, OSError)


def test_a_mismatch_says_which_setting_differs(redis_url):
    rotabloom.BloomFilter(redis_url, "mm", capacity=1000, error_rate=0.001)
    with pytest.raises(errors.ParameterMismatchError) as e:
        rotabloom.BloomFilter(redis_url, "mm", capacity=1000)
    assert (e.value.field, e.value.stored, e.value.requested) == ("error_rate", "0.001", "0.01")


def test_a_bitmap_that_cannot_be_adopted_raises_not_adoptable(redis_url):
    with pytest.raises(errors.NotAdoptableError) as e:
        rotabloom.ExpandingFilter.adopt_legacy(redis_url, "na", "no:such:key", bit=20, capacity=100)
    assert e.value.key == "no:such:key" and not e.value.retryable
    # Items said to be in it that are not: refused, nothing moved.
    client = redis.Redis.from_url(redis_url)
    client.setbit("sparse:bloomfilter", 12345, 1)
    with pytest.raises(errors.NotAdoptableError):
        rotabloom.ExpandingFilter.adopt_legacy(redis_url, "na", "sparse:bloomfilter", bit=20,
                                               capacity=100, verify=["0" * 40])
    assert client.exists("sparse:bloomfilter") and not client.exists("rotabloom:{na}:meta")
