// Selectors (see Selector.h).
#include "store/Selector.h"

#include <sstream>

#include "json/KubeObject.h"
#include "validation/MetadataValidation.h"

namespace apiserver {

namespace {

bool in_set(const std::string& value, const std::string& set_spec) {
  std::string s = set_spec.substr(1);
  if (!s.empty() && s.front() == '(') s.erase(0, 1);
  if (!s.empty() && s.back() == ')') s.pop_back();
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(" "), b = item.find_last_not_of(" ");
    if (a != std::string::npos && item.substr(a, b - a + 1) == value) return true;
  }
  return false;
}

}  // namespace

bool parse_selector(const std::string& s, bool label, Selector& out, std::string& err) {
  out.terms.clear();
  std::vector<std::string> parts;
  std::string cur;
  int paren = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (!label && c == '\\' && i + 1 < s.size()) {
      cur += s[++i];
      continue;
    }
    if (c == '(') ++paren;
    if (c == ')') --paren;
    if (c == ',' && paren == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  auto trim = [](std::string v) {
    size_t a = v.find_first_not_of(" \t"), b = v.find_last_not_of(" \t");
    return a == std::string::npos ? std::string() : v.substr(a, b - a + 1);
  };
  for (auto& p0 : parts) {
    std::string p = trim(p0);
    if (p.empty()) {
      if (parts.size() == 1) return true;
      err = "invalid selector: empty term";
      return false;
    }
    Selector::Term t;
    size_t pos;
    if ((pos = p.find("!=")) != std::string::npos) {
      t.op = Selector::Term::kNe;
      t.key = trim(p.substr(0, pos));
      t.value = trim(p.substr(pos + 2));
    } else if ((pos = p.find("==")) != std::string::npos) {
      t.key = trim(p.substr(0, pos));
      t.value = trim(p.substr(pos + 2));
    } else if ((pos = p.find('=')) != std::string::npos) {
      t.key = trim(p.substr(0, pos));
      t.value = trim(p.substr(pos + 1));
    } else if (label && p[0] == '!') {
      t.op = Selector::Term::kNotExists;
      t.key = trim(p.substr(1));
    } else if (label && (pos = p.find(" notin ")) != std::string::npos) {
      t.op = Selector::Term::kNe;
      t.key = trim(p.substr(0, pos));
      t.value = "\x01" + trim(p.substr(pos + 7));
    } else if (label && (pos = p.find(" in ")) != std::string::npos) {
      t.op = Selector::Term::kEq;
      t.key = trim(p.substr(0, pos));
      t.value = "\x01" + trim(p.substr(pos + 4));
    } else if (label) {
      t.op = Selector::Term::kExists;
      t.key = p;
    } else {
      err = "invalid selector: '" + s + "'; can't understand '" + p + "'";
      return false;
    }
    if (t.key.empty()) {
      err = "invalid selector: '" + s + "'";
      return false;
    }
    if (label && !qualified_name_errors(t.key).empty()) {
      err = "unable to parse requirement: " + qualified_name_errors(t.key)[0];
      return false;
    }
    out.terms.push_back(t);
  }
  return true;
}

std::optional<std::string> json_path_str(const J& o, const std::string& path) {
  const J* cur = &o;
  std::stringstream ss(path);
  std::string seg;
  while (std::getline(ss, seg, '.')) {
    if (!cur->is_object() || !cur->contains(seg)) return std::nullopt;
    cur = &(*cur)[seg];
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null()) return std::nullopt;
  return dumps(*cur);
}

bool Selector::matches(
    const std::function<std::optional<std::string>(const std::string&)>& get) const {
  for (auto& t : terms) {
    auto v = get(t.key);
    bool set = !t.value.empty() && t.value[0] == '\x01';
    switch (t.op) {
      case Term::kEq:
        if (!v) return false;
        if (set ? !in_set(*v, t.value) : *v != t.value) return false;
        break;
      case Term::kNe:
        if (v && (set ? in_set(*v, t.value) : *v == t.value)) return false;
        break;
      case Term::kExists:
        if (!v) return false;
        break;
      case Term::kNotExists:
        if (v) return false;
        break;
    }
  }
  return true;
}

bool object_matches(const std::string& ns, const Selector& fields, const Selector& labels,
                    const J& o) {
  if (!ns.empty() && meta_str(o, "namespace") != ns) return false;
  bool ok = fields.matches([&](const std::string& k) -> std::optional<std::string> {
    if (k == "source") return json_path_str(o, "source.component").value_or("");
    return json_path_str(o, k).value_or("");
  });
  if (!ok) return false;
  const J lab = o.contains("metadata") ? o["metadata"].value("labels", obj()) : obj();
  return labels.matches([&](const std::string& k) -> std::optional<std::string> {
    if (lab.is_object() && lab.contains(k) && lab[k].is_string()) return lab[k].get<std::string>();
    return std::nullopt;
  });
}

}  // namespace apiserver
