"""A tiny, strict renderer for the subset of Go text/template + Sprig that charts/leasehold uses.

No helm binary runs here, so the tests render the chart with this and check the result. It is
sound only because it refuses everything it does not implement: an unknown function, action,
keyword, variable, a missing value key, or an unbalanced block is an error, never a guess.

Supported:
  {{ pipeline }}  {{- ... -}} (whitespace trimming)  {{/* comment */}}
  if / else if / else / end, with / else / end, range / else / end (lists and maps),
  define "name" / end, include "name" CTX, $ (the data the template runs with), fields .a.b,
  literals: "string", `raw`, integers, true, false; parentheses; pipes.
  Functions: include toYaml nindent indent quote default printf trunc trimSuffix not and or eq
  ne fail dict.

    gotemplate.py check CHART_DIR               delimiters and block balance of every template
    gotemplate.py render CHART_DIR [--set k=v]  print the rendered chart (like helm template)
"""
import json
import re
import sys
from pathlib import Path

import yaml


class TemplateError(Exception):
    pass


class TemplateFail(TemplateError):
    """The template called `fail` (helm prints the message and stops)."""


# ---------------------------------------------------------------------------------------------
# Lexing: text and actions


def lex(src, name):
    """[(kind, value, line)] with kind 'text' or 'action'; trim markers applied to the text."""
    out = []
    pos = 0
    trim_next = False
    while True:
        start = src.find("{{", pos)
        text = src[pos:] if start < 0 else src[pos:start]
        if trim_next:
            text = text.lstrip(" \t\r\n")
        if start < 0:
            if "}}" in text:
                raise TemplateError(f"{name}:{line_of(src, src.find('}}', pos))}: '}}}}' "
                                    "without '{{'")
            out.append(("text", text, line_of(src, pos)))
            return out
        if "}}" in src[pos:start]:
            raise TemplateError(f"{name}:{line_of(src, src.find('}}', pos))}: '}}}}' without "
                                "'{{'")
        line = line_of(src, start)
        end = src.find("}}", start + 2)
        if end < 0:
            raise TemplateError(f"{name}:{line}: '{{{{' is never closed")
        inner = src[start + 2:end]
        if "{{" in inner:
            raise TemplateError(f"{name}:{line}: '{{{{' inside an action (missing '}}}}')")
        trim_prev = inner.startswith("- ") or inner.startswith("-\n") or inner == "-"
        trim_next = inner.endswith(" -") or inner.endswith("\n-")
        if inner.startswith("-") and not trim_prev and not re.match(r"-\d", inner):
            raise TemplateError(f"{name}:{line}: '{{{{-' must be followed by a space")
        if trim_prev:
            text = text.rstrip(" \t\r\n")
            inner = inner[1:]
        if trim_next:
            inner = inner[:-1]
        out.append(("text", text, line_of(src, pos)))
        out.append(("action", inner.strip(), line))
        pos = end + 2


def line_of(src, pos):
    return src.count("\n", 0, max(pos, 0)) + 1


TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<raw>`[^`]*`)
  | (?P<num>-?\d+)
  | (?P<lp>\()
  | (?P<rp>\))
  | (?P<pipe>\|)
  | (?P<field>(?:\$|\.)?(?:\.?[A-Za-z_][A-Za-z0-9_]*)*|\.)
""", re.VERBOSE)


def tokens(expr, where):
    out = []
    pos = 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise TemplateError(f"{where}: cannot parse {expr[pos:]!r} in {{{{ {expr} }}}}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        out.append((kind, m.group()))
    return out


# ---------------------------------------------------------------------------------------------
# Parsing: a tree of nodes

KEYWORDS = {"if", "else", "end", "with", "range", "define", "include", "template", "block",
            "break", "continue"}


class Node:
    def __init__(self, kind, line, **kw):
        self.kind = kind
        self.line = line
        self.__dict__.update(kw)


def parse_expr(toks, where):
    """A pipeline: [[operand, ...], ...] where an operand is ('lit', v), ('field', path),
    ('fn', name) or ('pipe', pipeline)."""
    pos = 0

    def pipeline(stop):
        nonlocal pos
        cmds = [[]]
        while pos < len(toks) and toks[pos][0] != stop:
            kind, val = toks[pos]
            pos += 1
            if kind == "pipe":
                if not cmds[-1]:
                    raise TemplateError(f"{where}: empty command before '|'")
                cmds.append([])
            elif kind == "lp":
                inner = pipeline("rp")
                if pos >= len(toks):
                    raise TemplateError(f"{where}: unclosed '('")
                pos += 1
                cmds[-1].append(("pipe", inner))
            elif kind == "rp":
                raise TemplateError(f"{where}: unexpected ')'")
            elif kind == "str":
                cmds[-1].append(("lit", json.loads(val)))
            elif kind == "raw":
                cmds[-1].append(("lit", val[1:-1]))
            elif kind == "num":
                cmds[-1].append(("lit", int(val)))
            elif val in ("true", "false"):
                cmds[-1].append(("lit", val == "true"))
            elif val.startswith(".") or val.startswith("$"):
                if val.startswith("$") and val != "$" and not val.startswith("$."):
                    raise TemplateError(f"{where}: variables other than $ are not supported")
                cmds[-1].append(("field", val))
            elif val in FUNCS:
                cmds[-1].append(("fn", val))
            else:
                raise TemplateError(f"{where}: unknown function or keyword {val!r}")
        if not cmds[-1]:
            raise TemplateError(f"{where}: empty pipeline")
        return cmds

    result = pipeline(None)
    if pos != len(toks):
        raise TemplateError(f"{where}: unexpected ')'")
    return result


def parse(src, name):
    """(top-level node list, {define name: node list})."""
    items = lex(src, name)
    defines = {}
    root = []
    # stack of (node, list being filled)
    stack = [(Node("root", 1), root)]
    for kind, value, line in items:
        where = f"{name}:{line}"
        body = stack[-1][1]
        if kind == "text":
            if value:
                body.append(Node("text", line, text=value))
            continue
        if value.startswith("/*"):
            if not value.endswith("*/"):
                raise TemplateError(f"{where}: unterminated comment")
            continue
        word = value.split(None, 1)[0] if value else ""
        rest = value[len(word):].strip()
        if word in ("if", "with", "range"):
            node = Node(word, line, branches=[(parse_expr(tokens(rest, where), where), [])],
                        otherwise=None)
            body.append(node)
            stack.append((node, node.branches[0][1]))
        elif word == "define":
            if len(stack) != 1:
                raise TemplateError(f"{where}: define inside a block")
            m = re.fullmatch(r'"([^"]+)"', rest)
            if not m:
                raise TemplateError(f"{where}: define needs one quoted name")
            if m.group(1) in defines:
                raise TemplateError(f"{where}: template {m.group(1)!r} defined twice")
            node = Node("define", line, name=m.group(1), body=[])
            defines[m.group(1)] = node
            stack.append((node, node.body))
        elif word == "else":
            top = stack[-1][0]
            if top.kind not in ("if", "with", "range") or top.otherwise is not None:
                raise TemplateError(f"{where}: 'else' without an open if/with/range")
            if rest.startswith("if ") or rest == "if":
                if top.kind != "if":
                    raise TemplateError(f"{where}: 'else if' in a {top.kind}")
                cond = rest[2:].strip()
                top.branches.append((parse_expr(tokens(cond, where), where), []))
                stack[-1] = (top, top.branches[-1][1])
            elif rest:
                raise TemplateError(f"{where}: unexpected {rest!r} after else")
            else:
                top.otherwise = []
                stack[-1] = (top, top.otherwise)
        elif word == "end":
            if rest:
                raise TemplateError(f"{where}: unexpected {rest!r} after end")
            if len(stack) == 1:
                raise TemplateError(f"{where}: 'end' without an open block")
            stack.pop()
        elif word in KEYWORDS - {"include"}:
            raise TemplateError(f"{where}: {word!r} is not supported by this renderer")
        else:
            body.append(Node("action", line, pipe=parse_expr(tokens(value, where), where)))
    if len(stack) != 1:
        node = stack[-1][0]
        raise TemplateError(f"{name}:{node.line}: '{node.kind}' is never closed with 'end'")
    return root, defines


# ---------------------------------------------------------------------------------------------
# Evaluation


def truthy(v):
    if v is None or v is False:
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v != 0
    if isinstance(v, (str, list, dict, tuple)):
        return len(v) > 0
    return True


def to_text(v, where):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, str)):
        return str(v)
    if isinstance(v, float):
        return repr(v) if v != int(v) else str(int(v))
    raise TemplateError(f"{where}: refusing to print a {type(v).__name__} (use toYaml)")


def go_quote(s):
    return json.dumps(s, ensure_ascii=False)


def to_yaml(v):
    if v is None:
        return "null"
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=True, width=10000).rstrip("\n")


def indent(n, s):
    pad = " " * n
    return pad + s.replace("\n", "\n" + pad)


def printf(fmt, *args):
    out, i = [], 0
    parts = re.split(r"(%[sdvq%])", fmt)
    for p in parts:
        if p == "%%":
            out.append("%")
        elif p in ("%s", "%d", "%v", "%q"):
            if i >= len(args):
                raise TemplateError(f"printf {fmt!r}: too few arguments")
            a = args[i]
            i += 1
            out.append(go_quote(str(a)) if p == "%q" else to_text(a, "printf"))
        elif "%" in p:
            raise TemplateError(f"printf: unsupported verb in {fmt!r}")
        else:
            out.append(p)
    if i != len(args):
        raise TemplateError(f"printf {fmt!r}: too many arguments")
    return "".join(out)


def trunc(n, s):
    s = to_text(s, "trunc")
    return s[:n] if n >= 0 else s[n:]


def default(d, *v):
    return d if not v or not truthy(v[0]) else v[0]


def fail(msg):
    raise TemplateFail(msg)


def dict_(*kv):
    if len(kv) % 2:
        raise TemplateError("dict needs key/value pairs")
    return {str(kv[i]): kv[i + 1] for i in range(0, len(kv), 2)}


def logical_and(*xs):
    for x in xs:
        if not truthy(x):
            return x
    return xs[-1]


def logical_or(*xs):
    for x in xs:
        if truthy(x):
            return x
    return xs[-1]


FUNCS = {
    "include": None,  # needs the renderer
    "toYaml": to_yaml,
    "nindent": lambda n, s: "\n" + indent(n, s),
    "indent": indent,
    "quote": lambda *xs: " ".join(go_quote(to_text(x, "quote")) for x in xs if x is not None),
    "default": default,
    "printf": printf,
    "trunc": trunc,
    "trimSuffix": lambda suffix, s: s[:-len(suffix)] if suffix and s.endswith(suffix) else s,
    "not": lambda x: not truthy(x),
    "and": logical_and,
    "or": logical_or,
    "eq": lambda a, *bs: any(a == b for b in bs),
    "ne": lambda a, b: a != b,
    "fail": fail,
    "dict": dict_,
}


class Renderer:
    def __init__(self, defines):
        self.defines = defines
        self.depth = 0

    def field(self, path, dot, root, where):
        if path == ".":
            return dot
        if path == "$":
            return root
        base = root if path.startswith("$") else dot
        parts = path.lstrip("$").lstrip(".").split(".")
        cur = base
        walked = ""
        for p in parts:
            walked += "." + p
            if not isinstance(cur, dict):
                raise TemplateError(f"{where}: {walked}: cannot read a field of "
                                    f"{type(cur).__name__}")
            if p not in cur:
                raise TemplateError(f"{where}: {walked} is not set (strict: every value the "
                                    "chart reads must exist in values.yaml)")
            cur = cur[p]
        return cur

    def operand(self, op, dot, root, where):
        kind, val = op
        if kind == "lit":
            return val
        if kind == "field":
            return self.field(val, dot, root, where)
        if kind == "pipe":
            return self.pipeline(val, dot, root, where)
        raise TemplateError(f"{where}: function {val!r} used as a value")

    def call(self, name, args, where):
        if name == "include":
            if len(args) != 2:
                raise TemplateError(f"{where}: include needs a name and a context")
            return self.include(args[0], args[1], where)
        try:
            return FUNCS[name](*args)
        except TemplateError:
            raise
        except TypeError as e:
            raise TemplateError(f"{where}: {name}: {e}") from e

    def pipeline(self, pipe, dot, root, where):
        value = None
        for i, cmd in enumerate(pipe):
            head = cmd[0]
            if head[0] == "fn":
                args = [self.operand(op, dot, root, where) for op in cmd[1:]]
                if i > 0:
                    args.append(value)
                value = self.call(head[1], args, where)
            else:
                if len(cmd) != 1 or i > 0:
                    raise TemplateError(f"{where}: a value cannot take arguments or be piped to")
                value = self.operand(head, dot, root, where)
        return value

    def include(self, name, ctx, where):
        if name not in self.defines:
            raise TemplateError(f"{where}: include of undefined template {name!r}")
        self.depth += 1
        if self.depth > 50:
            raise TemplateError(f"{where}: include recursion")
        try:
            return self.run(self.defines[name].body, ctx, ctx)
        finally:
            self.depth -= 1

    def run(self, nodes, dot, root):
        out = []
        for n in nodes:
            where = f"line {n.line}"
            if n.kind == "text":
                out.append(n.text)
            elif n.kind == "action":
                out.append(to_text(self.pipeline(n.pipe, dot, root, where), where))
            elif n.kind == "if":
                for cond, body in n.branches:
                    if truthy(self.pipeline(cond, dot, root, where)):
                        out.append(self.run(body, dot, root))
                        break
                else:
                    if n.otherwise is not None:
                        out.append(self.run(n.otherwise, dot, root))
            elif n.kind == "with":
                v = self.pipeline(n.branches[0][0], dot, root, where)
                if truthy(v):
                    out.append(self.run(n.branches[0][1], v, root))
                elif n.otherwise is not None:
                    out.append(self.run(n.otherwise, dot, root))
            elif n.kind == "range":
                v = self.pipeline(n.branches[0][0], dot, root, where)
                items = ([v[k] for k in sorted(v)] if isinstance(v, dict)
                         else list(v) if isinstance(v, list)
                         else None if v is None else TemplateError)
                if items is TemplateError:
                    raise TemplateError(f"{where}: range over {type(v).__name__}")
                if items:
                    for item in items:
                        out.append(self.run(n.branches[0][1], item, root))
                elif n.otherwise is not None:
                    out.append(self.run(n.otherwise, dot, root))
        return "".join(out)


# ---------------------------------------------------------------------------------------------
# Charts


def deep_merge(base, over):
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def template_files(chart):
    t = Path(chart) / "templates"
    return sorted(p for p in t.rglob("*") if p.is_file())


def check_chart(chart):
    """Parses every template (delimiters, block balance, known functions). Returns the defines."""
    defines = {}
    for path in template_files(chart):
        rel = str(path.relative_to(chart))
        nodes, defs = parse(path.read_text(), rel)
        for k, v in defs.items():
            if k in defines:
                raise TemplateError(f"{rel}: template {k!r} already defined")
            defines[k] = v
        if path.name.startswith("_"):
            if any(n.kind != "text" or n.text.strip() for n in nodes):
                raise TemplateError(f"{rel}: a helpers file may only hold define blocks")
    return defines


def render_chart(chart, overrides=None, release="leasehold", namespace="default"):
    """{relative path: rendered text} for every non-helper template, like `helm template`."""
    chart = Path(chart)
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    values = yaml.safe_load((chart / "values.yaml").read_text()) or {}
    values = deep_merge(values, overrides or {})
    root = {
        "Values": values,
        "Release": {"Name": release, "Namespace": namespace, "Service": "Helm",
                    "IsInstall": True, "IsUpgrade": False, "Revision": 1},
        "Chart": {"Name": meta["name"], "Version": meta["version"],
                  "AppVersion": meta.get("appVersion", "")},
    }
    defines = check_chart(chart)
    renderer = Renderer(defines)
    out = {}
    for path in template_files(chart):
        if path.name.startswith("_"):
            continue
        rel = str(path.relative_to(chart))
        nodes, _ = parse(path.read_text(), rel)
        try:
            out[rel] = renderer.run(nodes, root, root)
        except TemplateFail:
            raise
        except TemplateError as e:
            raise TemplateError(f"{rel}: {e}") from e
    return out


def documents(rendered):
    """[(path, object)] of every non-empty YAML document (NOTES.txt excluded)."""
    docs = []
    for rel, text in rendered.items():
        if rel.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc is not None:
                docs.append((rel, doc))
    return docs


def parse_set(items):
    """--set a.b=c (c parsed as YAML: true, 3, "x")."""
    out = {}
    for item in items:
        key, _, raw = item.partition("=")
        cur = out
        parts = key.split(".")
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = yaml.safe_load(raw) if raw else ""
    return out


def main(argv):
    if len(argv) < 2 or argv[0] not in ("check", "render"):
        print(__doc__, file=sys.stderr)
        return 2
    chart = argv[1]
    try:
        if argv[0] == "check":
            defines = check_chart(chart)
            print(f"ok: {len(template_files(chart))} templates, {len(defines)} defines")
            return 0
        sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
        for rel, text in render_chart(chart, parse_set(sets)).items():
            print(f"---\n# Source: {rel}\n{text.strip()}")
        return 0
    except TemplateError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
