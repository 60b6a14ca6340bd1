"""Config files and ``--set`` values as YAML, read in time and memory bounded by their text.

:func:`load_yaml` alone reads YAML here: a file of at most :data:`MAX_CONFIG_BYTES`, no aliases, nesting at most
:data:`MAX_YAML_DEPTH` deep, no key given twice in one mapping. YAML gives the structure (mappings, lists); every
scalar stays the text it was written as (no YAML typing: ``yes``, ``1e-4``, ``0x1f`` are text), read by its key's
type with :mod:`pedro_env.keys` like every other ``KEY=VALUE`` (:func:`train.config.make_train_config`), so
``six_card: 1`` in a file, ``--set env.six_card=1`` and ``pedro-eval --set six_card=1`` mean the same.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents import shipped_folder
from pedro_env.config import short_repr
from train.config_keys import TrainConfigError


def check_keys(values: dict[Any, Any], where: str) -> None:
    for key in values:
        if not isinstance(key, str):
            raise TrainConfigError(f"{where}: key {short_repr(key)} is not a name: config keys are words such as lr")


def yaml_problem(error: Exception) -> str:
    """A PyYAML error in one line: its problem and where (line, column)."""
    problem = getattr(error, "problem", None) or str(error).strip().splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(problem)


@functools.cache
def _text_loader() -> type:
    """A safe YAML loader that types no scalar: every plain scalar is read as the text it is (str)."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return type("TextScalarLoader", (base,), {"yaml_implicit_resolvers": {}})


MAX_CONFIG_BYTES = 65_536
"""The largest config file read (the shipped ones hold 1 to 3 kB): reading one takes bounded time and memory."""
MAX_YAML_DEPTH = 16
"""The deepest nesting of lists and mappings in config YAML (a config nests two deep: ``env:``, lists of specs)."""


def load_yaml(text: str, where: str) -> Any:
    """The value of the YAML ``text`` (one document), in time and memory bounded by the text's length.

    Refused with TrainConfigError naming ``where`` and the line: an alias (``*name``: nine nested aliases of
    nine expand a kilobyte into 387 million items; nothing we ship uses anchors), lists and mappings nested
    deeper than :data:`MAX_YAML_DEPTH`, a key given twice in one mapping (YAML keeps the last in silence) and
    a scalar Python cannot read (one tagged ``!!int`` of more than 4300 digits). Every plain scalar is a str.
    Text that is not YAML raises yaml.YAMLError.
    """
    import yaml

    loader_class = _text_loader()
    depth = 0
    for event in yaml.parse(text, Loader=loader_class):  # events only: nothing is built yet
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise TrainConfigError(
                f"{where}: alias {short_repr('*' + event.anchor, 40)} at line {line} is not allowed: write each "
                "value out (YAML anchors and aliases are not read in a config)"
            )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise TrainConfigError(
                    f"{where}: lists and mappings nest more than {MAX_YAML_DEPTH} deep at line {line}"
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_unique_keys(node, where)
        try:
            return loader.construct_document(node)
        except ValueError as error:  # e.g. an int past Python's 4300-digit limit
            raise TrainConfigError(f"{where}: a value YAML cannot read: {str(error).split(';')[0]}") from None
    finally:
        loader.dispose()


def _check_unique_keys(root: Any, where: str) -> None:
    """TrainConfigError naming the first key (dotted from the top) given twice in one mapping under ``root``."""
    import yaml

    pending = [(root, "")]
    while pending:  # a loop, not recursion: the nesting was bounded, but stays cheap either way
        node, path = pending.pop()
        if isinstance(node, yaml.SequenceNode):
            pending.extend((item, f"{path}[{index}]") for index, item in reversed(list(enumerate(node.value))))
        elif isinstance(node, yaml.MappingNode):
            lines: dict[tuple[str, str], int] = {}
            below = []
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue  # not a name: read_yaml refuses it by name
                name = f"{path}.{key_node.value}" if path else key_node.value
                line = key_node.start_mark.line + 1
                key = (key_node.tag, key_node.value)
                if key in lines:
                    at = f"on line {line}" if lines[key] == line else f"at lines {lines[key]} and {line}"
                    raise TrainConfigError(f"{where}: key {short_repr(name)} is given twice {at}: give it once")
                lines[key] = line
                below.append((value_node, name))
            pending.extend(reversed(below))


CONFIGS_DIR = shipped_folder(Path(__file__).resolve().parent, "configs")
"""The shipped configs: the repository's ``configs/``, ``train/configs/`` in a wheel's install."""


def shipped_configs() -> list[str]:
    """The names of the shipped configs, sorted: their files' stems in :data:`CONFIGS_DIR` (``smoke``)."""
    return sorted(path.stem for path in CONFIGS_DIR.glob("*.yaml"))


def config_file(config: str | Path, base_of: Path | None = None) -> Path:
    """The file of a config given by name or by path: a shipped config's name (``smoke``, ``ppo_selfplay``) is its
    file in :data:`CONFIGS_DIR` wherever the command runs; anything else is a path, relative to the working
    directory (``./smoke`` reads a file of that name), or for the ``base`` key of the config file ``base_of``
    relative to that file's folder.

    TrainConfigError in one line listing the shipped names for a word that is neither a name nor a file."""
    text = str(config)
    names = shipped_configs()
    if text in names:
        return CONFIGS_DIR / f"{text}.yaml"
    path = Path(config) if base_of is None else base_of.parent / config
    if Path(text).name == text and not Path(text).suffix and not path.exists():  # a word, not a path
        what = "config" if base_of is None else f"config file {base_of}: base"
        raise TrainConfigError(
            f"{what} {short_repr(text)} is no shipped config and no file: name one of {', '.join(names)}, "
            "or give a YAML file's path"
        )
    return path


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping in a YAML config file of at most :data:`MAX_CONFIG_BYTES`, read by :func:`load_yaml` (a clear
    error for a missing file, one too big or a file that is not a mapping)."""
    import yaml

    path = Path(path)
    if path.is_dir():
        raise TrainConfigError(f"config file {path} is a directory; give a YAML file or a shipped config's name")
    if path.exists() and not path.is_file():
        raise TrainConfigError(f"config file {path} is not a regular file; give a YAML file or a shipped config's name")
    if not path.is_file():
        names = ", ".join(shipped_configs())
        raise TrainConfigError(f"config file not found: {path} (or name a shipped config: {names})")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise TrainConfigError(
                f"config file {path} is larger than {MAX_CONFIG_BYTES:,} bytes, the most a config file may hold"
            )
        values = load_yaml(data.decode("utf-8"), f"config file {path}")
    except UnicodeDecodeError:
        raise TrainConfigError(f"config file {path} is not UTF-8 text") from None
    except OSError as error:
        raise TrainConfigError(f"cannot read config file {path}: {error.strerror or error}") from None
    except (yaml.YAMLError, RecursionError) as error:
        raise TrainConfigError(f"config file {path} is not valid YAML: {yaml_problem(error)}") from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise TrainConfigError(f"config file {path} must hold a mapping of config keys, got {type(values).__name__}")
    check_keys(values, f"config file {path}")
    return values


def read_config_file(config: str | Path, within: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The keys of a config (a file, or a shipped config by name: :func:`config_file`) over those of the config its
    ``base`` key names (a path relative to it, or a shipped config's name), if any.

    Its keys replace the base's; ``env`` is merged key by key. A base may name a base of its own.
    """
    path = config_file(config)
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in read_yaml(path).items():
        name = key.replace("-", "_")  # num-envs is num_envs
        if name in values:
            raise TrainConfigError(
                f"config file {path}: keys {short_repr(spelled[name])} and {short_repr(key)} both name "
                f"{short_repr(name)}: give it once"
            )
        values[name], spelled[name] = value, key
    base = values.pop("base", None)
    if base is None:
        return values
    if not isinstance(base, str) or not base.strip():
        raise TrainConfigError(
            f"config file {path}: 'base' = {short_repr(base)} is not allowed: it takes the path of another "
            "config file, relative to this one (e.g. base: ppo_long.yaml), or a shipped config's name (ppo_long)"
        )
    base_path = config_file(base, base_of=path)
    if base_path.resolve() in (*within, path.resolve()):
        raise TrainConfigError(f"config file {path}: base {base} leads back to a file that names it as its base")
    merged = read_config_file(base_path, (*within, path.resolve()))
    env = values.pop("env", None)
    if isinstance(env, Mapping) and isinstance(merged.get("env"), Mapping):
        env = {**merged["env"], **env}
    if env is not None:
        merged["env"] = env
    return {**merged, **values}
