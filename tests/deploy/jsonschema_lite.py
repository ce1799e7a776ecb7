"""A JSON-schema (draft-07) validator for the keywords values.schema.json uses; stdlib only.

It rejects any schema keyword it does not implement, so the schema cannot silently grow past
what is checked here. When the `jsonschema` package (Debian: python3-jsonschema) is importable,
the tests validate with it as well and require both to agree.

    errors = validate(instance, schema)   # [] when valid, else ["$.path: message", ...]
"""
import re

ANNOTATIONS = {"$schema", "title", "description", "default", "examples", "$comment"}
KEYWORDS = {"type", "properties", "required", "additionalProperties", "enum", "pattern",
            "minimum", "maximum", "minLength", "maxLength", "items", "minItems", "$ref",
            "definitions"}

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
}


class SchemaError(Exception):
    pass


def check_schema(schema, where="#"):
    """Raises SchemaError on keywords outside the supported subset."""
    if not isinstance(schema, dict):
        raise SchemaError(f"{where}: a schema must be an object")
    unknown = set(schema) - KEYWORDS - ANNOTATIONS
    if unknown:
        raise SchemaError(f"{where}: unsupported keywords {sorted(unknown)}")
    types = schema.get("type")
    for t in [types] if isinstance(types, str) else types or []:
        if t not in TYPES:
            raise SchemaError(f"{where}: unknown type {t!r}")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{where}/properties/{name}")
    for name, sub in schema.get("definitions", {}).items():
        check_schema(sub, f"{where}/definitions/{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        check_schema(schema["additionalProperties"], f"{where}/additionalProperties")
    if "items" in schema:
        check_schema(schema["items"], f"{where}/items")
    if "$ref" in schema and not schema["$ref"].startswith("#/definitions/"):
        raise SchemaError(f"{where}: only local #/definitions/ references are supported")
    if "pattern" in schema:
        re.compile(schema["pattern"])


def resolve(root, ref):
    node = root
    for part in ref[2:].split("/"):
        if part not in node:
            raise SchemaError(f"unresolvable $ref {ref}")
        node = node[part]
    return node


def validate(instance, schema, root=None, path="$"):
    root = root if root is not None else schema
    if root is schema:
        check_schema(schema)
    errors = []
    if "$ref" in schema:
        errors += validate(instance, resolve(root, schema["$ref"]), root, path)
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        if not any(TYPES[t](instance) for t in names):
            return errors + [f"{path}: {instance!r} is not of type {' or '.join(names)}"]
    if "enum" in schema and instance not in schema["enum"]:
        errors.append(f"{path}: {instance!r} is not one of {schema['enum']}")
    if isinstance(instance, str):
        if "pattern" in schema and not re.search(schema["pattern"], instance):
            errors.append(f"{path}: {instance!r} does not match {schema['pattern']!r}")
        if "minLength" in schema and len(instance) < schema["minLength"]:
            errors.append(f"{path}: {instance!r} is shorter than {schema['minLength']}")
        if "maxLength" in schema and len(instance) > schema["maxLength"]:
            errors.append(f"{path}: {instance!r} is longer than {schema['maxLength']}")
    if TYPES["number"](instance):
        if "minimum" in schema and instance < schema["minimum"]:
            errors.append(f"{path}: {instance} is less than the minimum {schema['minimum']}")
        if "maximum" in schema and instance > schema["maximum"]:
            errors.append(f"{path}: {instance} is greater than the maximum {schema['maximum']}")
    if isinstance(instance, list):
        if "minItems" in schema and len(instance) < schema["minItems"]:
            errors.append(f"{path}: needs at least {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(instance):
                errors += validate(item, schema["items"], root, f"{path}[{i}]")
    if isinstance(instance, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in instance:
                errors.append(f"{path}: {name!r} is a required property")
        extra = schema.get("additionalProperties", True)
        for name, value in instance.items():
            if name in props:
                errors += validate(value, props[name], root, f"{path}.{name}")
            elif extra is False:
                errors.append(f"{path}: additional property {name!r} is not allowed")
            elif isinstance(extra, dict):
                errors += validate(value, extra, root, f"{path}.{name}")
    return errors
