// The bash, zsh and fish scripts of `gaia completion`. Each script is two parts: data
// functions generated from the command model (subcommands, options with where their
// values come from, positional arguments), and a small engine, the same in all three
// shells, that walks the words typed so far to find the command path, the flag waiting
// for a value and the index of the positional argument, then offers what fits.
#include <fmt/format.h>

#include "cli/completion.hpp"

namespace gaia::cli {

namespace {

// One line of text, without tabs or newlines (they separate fields in the data).
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  return s;
}

// A single-quoted word for bash and zsh.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : one_line(s)) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

// A single-quoted word for fish, where \ and ' are escaped inside the quotes.
std::string fish_quote(const std::string& s) {
  std::string out = "'";
  for (char c : one_line(s)) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

using Quote = std::string (*)(const std::string&);

std::string joined_names(const OptionSpec& o) { return fmt::format("{}", fmt::join(o.names, " ")); }

// `printf` of tab-separated records, one argument group per record. The shells reuse
// the format for every group.
std::string printf_records(Quote quote, const std::string& indent, const std::vector<std::vector<std::string>>& rows) {
  if (rows.empty()) return "";  // An empty case body is valid in sh and fish alike.
  std::string fmt_arg = "'";
  for (size_t i = 0; i < rows[0].size(); ++i) fmt_arg += i ? "\\t%s" : "%s";
  fmt_arg += "\\n'";
  std::string out = indent + "printf " + fmt_arg;
  for (const auto& row : rows) {
    out += " \\\n" + indent + "  ";
    for (size_t i = 0; i < row.size(); ++i) out += (i ? " " : "") + quote(row[i]);
  }
  return out + "\n";
}

std::vector<std::vector<std::string>> sub_rows(const CommandSpec& c) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : c.subcommands) rows.push_back({s.name, s.description});
  return rows;
}

std::vector<std::vector<std::string>> option_rows(const CommandSpec& c) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& o : c.options) rows.push_back({joined_names(o), o.values.encode(), o.description});
  return rows;
}

// Patterns on "PATH|INDEX|FIRST" (FIRST: the first positional's value once it is
// typed) and the value source each selects, most specific first. Only `*` is used as a
// wildcard, so the patterns read the same in sh `case` and fish `switch`.
std::vector<std::pair<std::string, std::string>> arg_rows(const CommandSpec& c) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& b : c.by_first)
    rows.emplace_back(fmt::format("{}|{}|{}", c.path, b.position < 0 ? "*" : std::to_string(b.position), b.first),
                      b.values.encode());
  // The last argument may repeat: a catch-all for the indices after it. Free-text rows
  // are only needed to keep that catch-all from answering for an earlier argument.
  bool catch_all = !c.positionals.empty() && c.positionals.back().many &&
                   c.positionals.back().values.kind != ValueSource::Kind::text;
  for (size_t i = 0; i < c.positionals.size(); ++i)
    if (catch_all || c.positionals[i].values.kind != ValueSource::Kind::text)
      rows.emplace_back(fmt::format("{}|{}|*", c.path, i), c.positionals[i].values.encode());
  if (catch_all) rows.emplace_back(c.path + "|*", c.positionals.back().values.encode());
  return rows;
}

// The data functions in sh syntax (bash and zsh read the same).
std::string sh_data(const CommandSpec& root) {
  auto all = flatten(root);
  std::string out = "# Subcommands of a command path: name<TAB>description.\n_gaia_subs() {\n  case $1 in\n";
  for (const auto* c : all) {
    if (c->subcommands.empty()) continue;
    out += "    " + sh_quote(c->path) + ")\n" + printf_records(sh_quote, "      ", sub_rows(*c)) + "      ;;\n";
  }
  out += "  esac\n}\n\n";
  out += "# Flags of a command path (its own and the global ones): names<TAB>values<TAB>description.\n"
         "_gaia_opts() {\n  case $1 in\n";
  for (const auto* c : all)
    out += "    " + sh_quote(c->path) + ")\n" + printf_records(sh_quote, "      ", option_rows(*c)) + "      ;;\n";
  out += "  esac\n}\n\n";
  out += "# Where positional argument INDEX of PATH comes from, given the FIRST argument.\n"
         "_gaia_args() {\n  case \"$1|$2|$3\" in\n";
  for (const auto* c : all)
    for (const auto& [pattern, source] : arg_rows(*c)) {
      // Quote all but the wildcards.
      std::string quoted;
      size_t start = 0;
      for (size_t star = pattern.find('*'); star != std::string::npos; star = pattern.find('*', start)) {
        if (star > start) quoted += sh_quote(pattern.substr(start, star - start));
        quoted += "*";
        start = star + 1;
      }
      if (start < pattern.size()) quoted += sh_quote(pattern.substr(start));
      out += "    " + quoted + ") echo " + sh_quote(source) + " ;;\n";
    }
  out += "  esac\n}\n";
  return out;
}

const char* k_bash_engine = R"SH(
# _gaia_find_opt PATH NAME: the _gaia_opts line of flag NAME.
_gaia_find_opt() {
  local line names
  while IFS= read -r line; do
    names=${line%%$'\t'*}
    case " $names " in *" $2 "*) printf '%s\n' "$line"; return 0 ;; esac
  done <<< "$(_gaia_opts "$1")"
  return 1
}

_gaia_is_sub() {
  local line
  while IFS= read -r line; do
    [[ -n $line && ${line%%$'\t'*} == "$2" ]] && return 0
  done <<< "$(_gaia_subs "$1")"
  return 1
}

# _gaia_values SOURCE CUR: adds the words of SOURCE that start with CUR to COMPREPLY.
_gaia_values() {
  local w
  case $1 in
    choices\ *)
      for w in ${1#choices }; do [[ $w == "$2"* ]] && COMPREPLY+=("$w"); done ;;
    names\ *)
      while IFS= read -r w; do [[ -n $w ]] && COMPREPLY+=("$w"); done \
        < <("$_gaia_prog" "${_gaia_globals[@]}" __complete "${1#names }" "$2" 2>/dev/null) ;;
    files)
      compopt -o filenames 2>/dev/null
      while IFS= read -r w; do [[ -n $w ]] && COMPREPLY+=("$w"); done < <(compgen -f -- "$2") ;;
    dirs)
      compopt -o filenames 2>/dev/null
      while IFS= read -r w; do [[ -n $w ]] && COMPREPLY+=("$w"); done < <(compgen -d -- "$2") ;;
  esac
}

_gaia() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmdpath="" npos=0 first="" expect="" w i line src
  local _gaia_prog=${COMP_WORDS[0]}
  local -a _gaia_globals=()
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    # bash splits "--flag=value" into three words; the value follows the "=".
    [[ $w == = ]] && continue
    if [[ -n $expect ]]; then
      # The store names come from the store, context and tenant typed so far.
      case $expect in --store | --context | --tenant) _gaia_globals+=("$expect=$w") ;; esac
      expect=""
      continue
    fi
    if [[ $w == -?* ]]; then
      line=$(_gaia_find_opt "$cmdpath" "$w") || continue
      src=${line#*$'\t'}
      [[ ${src%%$'\t'*} != flag ]] && expect=$w
      continue
    fi
    if ((npos == 0)) && _gaia_is_sub "$cmdpath" "$w"; then
      cmdpath=${cmdpath:+$cmdpath }$w
      continue
    fi
    ((npos == 0)) && first=$w
    npos=$((npos + 1))
  done
  # "--flag=" with the cursor right after "=": bash's current word is "=" itself.
  [[ $cur == = ]] && cur=""
  if [[ -n $expect ]]; then
    line=$(_gaia_find_opt "$cmdpath" "$expect") || return 0
    src=${line#*$'\t'}
    _gaia_values "${src%%$'\t'*}" "$cur"
    return 0
  fi
  if [[ $cur == -* ]]; then
    while IFS= read -r line; do
      for w in ${line%%$'\t'*}; do [[ $w == "$cur"* ]] && COMPREPLY+=("$w"); done
    done <<< "$(_gaia_opts "$cmdpath")"
    return 0
  fi
  if ((npos == 0)); then
    while IFS= read -r line; do
      w=${line%%$'\t'*}
      [[ -n $w && $w == "$cur"* ]] && COMPREPLY+=("$w")
    done <<< "$(_gaia_subs "$cmdpath")"
  fi
  src=$(_gaia_args "$cmdpath" "$npos" "$first")
  [[ -n $src ]] && _gaia_values "$src" "$cur"
  return 0
}
)SH";

const char* k_zsh_engine = R"SH(
_gaia_find_opt() {
  local line
  for line in "${(@f)$(_gaia_opts "$1")}"; do
    if (( ${${=line%%$'\t'*}[(Ie)$2]} )); then
      print -r -- "$line"
      return 0
    fi
  done
  return 1
}

_gaia_is_sub() {
  local line
  for line in "${(@f)$(_gaia_subs "$1")}"; do
    [[ -n $line && ${line%%$'\t'*} == "$2" ]] && return 0
  done
  return 1
}

# _gaia_values SOURCE CUR PROG GLOBALS...: offers the words of SOURCE.
_gaia_values() {
  local src=$1 cur=$2 prog=$3
  shift 3
  local -a found
  case $src in
    choices\ *) compadd -- ${=src#choices } ;;
    names\ *)
      found=("${(@f)$($prog "$@" __complete ${src#names } "$cur" 2>/dev/null)}")
      found=(${found:#})
      (( ${#found} )) && compadd -- $found ;;
    files) _files ;;
    dirs) _files -/ ;;
  esac
}

_gaia() {
  # No `emulate -L zsh`: compsys has set its options already, and _describe needs
  # extendedglob, which emulate would turn off for everything called from here.
  local cur=${words[CURRENT]} prog=${words[1]} cmdpath="" npos=0 first="" expect="" w i line src desc n
  local -a globals subs opts
  for (( i = 2; i < CURRENT; i++ )); do
    w=${words[i]}
    if [[ -n $expect ]]; then
      # The store names come from the store, context and tenant typed so far.
      case $expect in --store | --context | --tenant) globals+=("$expect=$w") ;; esac
      expect=""
      continue
    fi
    if [[ $w == --*=* ]]; then
      case ${w%%=*} in --store | --context | --tenant) globals+=("$w") ;; esac
      continue
    fi
    if [[ $w == -?* ]]; then
      line=$(_gaia_find_opt "$cmdpath" "$w") || continue
      src=${line#*$'\t'}
      [[ ${src%%$'\t'*} != flag ]] && expect=$w
      continue
    fi
    if (( npos == 0 )) && _gaia_is_sub "$cmdpath" "$w"; then
      cmdpath=${cmdpath:+$cmdpath }$w
      continue
    fi
    (( npos == 0 )) && first=$w
    npos=$(( npos + 1 ))
  done
  if [[ -z $expect && $cur == --*=* ]]; then
    expect=${cur%%=*}
    compset -P '*='
    cur=${cur#*=}
  fi
  if [[ -n $expect ]]; then
    line=$(_gaia_find_opt "$cmdpath" "$expect") || return 1
    src=${line#*$'\t'}
    _gaia_values "${src%%$'\t'*}" "$cur" "$prog" $globals
    return
  fi
  if [[ $cur == -* ]]; then
    for line in "${(@f)$(_gaia_opts "$cmdpath")}"; do
      [[ -z $line ]] && continue
      desc=${line#*$'\t'}
      desc=${desc#*$'\t'}
      for n in ${=line%%$'\t'*}; do opts+=("${n}:${desc}"); done
    done
    _describe -t options 'gaia flag' opts
    return
  fi
  if (( npos == 0 )); then
    for line in "${(@f)$(_gaia_subs "$cmdpath")}"; do
      [[ -n $line ]] && subs+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
    done
    (( ${#subs} )) && _describe -t commands 'gaia command' subs
  fi
  src=$(_gaia_args "$cmdpath" "$npos" "$first")
  [[ -n $src ]] && _gaia_values "$src" "$cur" "$prog" $globals
  return 0
}
)SH";

// The fish data functions: the same records as sh_data, in `switch` form.
std::string fish_data(const CommandSpec& root) {
  auto all = flatten(root);
  std::string out = "# Subcommands of a command path: name<TAB>description.\nfunction __gaia_subs\n    switch $argv[1]\n";
  for (const auto* c : all) {
    if (c->subcommands.empty()) continue;
    out += "        case " + fish_quote(c->path) + "\n" + printf_records(fish_quote, "            ", sub_rows(*c));
  }
  out += "    end\nend\n\n";
  out += "# Flags of a command path (its own and the global ones): names<TAB>values<TAB>description.\n"
         "function __gaia_opts\n    switch $argv[1]\n";
  for (const auto* c : all)
    out += "        case " + fish_quote(c->path) + "\n" + printf_records(fish_quote, "            ", option_rows(*c));
  out += "    end\nend\n\n";
  out += "# Where positional argument INDEX of PATH comes from, given the FIRST argument.\n"
         "function __gaia_args\n    switch \"$argv[1]|$argv[2]|$argv[3]\"\n";
  for (const auto* c : all)
    for (const auto& [pattern, source] : arg_rows(*c))
      out += "        case " + fish_quote(pattern) + "\n            echo " + fish_quote(source) + "\n";
  out += "    end\nend\n";
  return out;
}

const char* k_fish_engine = R"FISH(
function __gaia_find_opt --argument-names cmdpath name
    for line in (__gaia_opts $cmdpath)
        set -l names (string split ' ' -- (string split \t -- $line)[1])
        if contains -- $name $names
            echo $line
            return 0
        end
    end
    return 1
end

function __gaia_is_sub --argument-names cmdpath name
    for line in (__gaia_subs $cmdpath)
        test (string split \t -- $line)[1] = "$name"; and return 0
    end
    return 1
end

# __gaia_values SOURCE CUR PREFIX PROG GLOBALS...: prints the candidates of SOURCE.
function __gaia_values
    set -l src (string split -m1 ' ' -- $argv[1])
    set -l cur $argv[2]
    set -l prefix $argv[3]
    switch $src[1]
        case choices
            for c in (string split ' ' -- $src[2])
                echo $prefix$c
            end
        case names
            set -l command $argv[4..-1]
            for n in ($command __complete $src[2] $cur 2>/dev/null)
                echo $prefix$n
            end
        case files
            __fish_complete_path $cur
        case dirs
            __fish_complete_directories $cur
    end
end

function __gaia_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l prog $tokens[1]
    set -e tokens[1]
    set -l cmdpath ''
    set -l npos 0
    set -l first ''
    set -l expect ''
    set -l globals
    for w in $tokens
        if test -n "$expect"
            # The store names come from the store, context and tenant typed so far.
            contains -- $expect --store --context --tenant; and set -a globals "$expect=$w"
            set expect ''
            continue
        end
        if string match -q -- '--*=*' $w
            contains -- (string split -m1 = -- $w)[1] --store --context --tenant; and set -a globals $w
            continue
        end
        if string match -q -- '-?*' $w
            set -l line (__gaia_find_opt $cmdpath $w); or continue
            test (string split \t -- $line)[2] != flag; and set expect $w
            continue
        end
        if test $npos -eq 0; and __gaia_is_sub $cmdpath $w
            set cmdpath (string trim -- "$cmdpath $w")
            continue
        end
        test $npos -eq 0; and set first $w
        set npos (math $npos + 1)
    end
    if test -n "$expect"
        set -l line (__gaia_find_opt $cmdpath $expect); or return
        __gaia_values (string split \t -- $line)[2] "$cur" '' $prog $globals
        return
    end
    if string match -q -- '--*=*' $cur
        set -l parts (string split -m1 = -- $cur)
        set -l line (__gaia_find_opt $cmdpath $parts[1]); or return
        __gaia_values (string split \t -- $line)[2] "$parts[2]" "$parts[1]=" $prog $globals
        return
    end
    if string match -q -- '-*' $cur
        for line in (__gaia_opts $cmdpath)
            set -l fields (string split \t -- $line)
            for n in (string split ' ' -- $fields[1])
                printf '%s\t%s\n' $n $fields[3]
            end
        end
        return
    end
    if test $npos -eq 0
        __gaia_subs $cmdpath
    end
    set -l src (__gaia_args $cmdpath $npos "$first")
    test -n "$src"; and __gaia_values $src "$cur" '' $prog $globals
end
)FISH";

std::string header(const std::string& shell, const std::string& comment) {
  return fmt::format(
      "{0} gaia completion for {1}. Generated from gaia's command tree by `gaia completion {1}`;\n"
      "{0} do not edit (completions/ is regenerated by the build and checked by the tests).\n"
      "{0} Names of apps, instances, nodes, tenants and contexts come from `gaia __complete`.\n",
      comment, shell);
}

}  // namespace

std::string bash_script(const CommandSpec& root, const std::string& program) {
  return header("bash", "#") + "\n" + sh_data(root) + k_bash_engine + "\ncomplete -F _gaia " + program + "\n";
}

std::string zsh_script(const CommandSpec& root, const std::string& program) {
  return "#compdef " + program + "\n" + header("zsh", "#") + "\n" + sh_data(root) + k_zsh_engine +
         "\n# Autoloaded from $fpath, this file is _gaia's body: run it. Sourced, register it.\n"
         "if [[ $funcstack[1] == _gaia ]]; then\n  _gaia \"$@\"\n"
         "elif (( $+functions[compdef] )); then\n  compdef _gaia " + program + "\n"
         "else\n  print -u2 'gaia: zsh completion needs compinit: autoload -U compinit && compinit'\nfi\n";
}

std::string fish_script(const CommandSpec& root, const std::string& program) {
  return header("fish", "#") + "\n" + fish_data(root) + k_fish_engine + "\ncomplete -c " + program +
         " -e\ncomplete -c " + program + " -f -a '(__gaia_complete)'\n";
}

}  // namespace gaia::cli
