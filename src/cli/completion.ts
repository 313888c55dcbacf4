// Shell completion scripts for bash, zsh and fish, derived from commander's command tree: the
// commands, each one's subcommands and flags, a flag's choices, and files for a flag whose
// value is a path. The scripts are static (nothing runs edgectl at each Tab): each finds the
// command typed so far from the words that name commands, and offers what that command takes.
import type { Command, Option } from 'commander';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

interface Flag {
  names: string[];
  long?: string;
  short?: string;
  description: string;
  /** none: a switch; choices, files or any value */
  value: 'none' | 'choices' | 'files' | 'any';
  choices: string[];
}

interface Node {
  /** e.g. "edgectl sessions list" */
  path: string;
  commands: { name: string; description: string }[];
  flags: Flag[];
}

/** A description's first clause, short enough for a completion menu. */
export function brief(text: string): string {
  const first = text.split(/: |; | \(|\. /)[0]!.trim();
  return first.length > 80 ? `${first.slice(0, 77).trimEnd()}...` : first;
}

function flagOf(o: Option): Flag {
  const takes = o.required || o.optional;
  const arg = /<([^>]+)>|\[([^\]]+)\]/.exec(o.flags);
  const argName = (arg?.[1] ?? arg?.[2] ?? '').toLowerCase();
  const choices = o.argChoices ?? [];
  return {
    names: [o.short, o.long].filter((n): n is string => !!n),
    long: o.long,
    short: o.short,
    description: brief(o.description),
    value: !takes ? 'none' : choices.length ? 'choices' : /^(path|file|dir)$/.test(argName) ? 'files' : 'any',
    choices,
  };
}

/** Every command of the tree, from the root, with what it takes. */
export function commandTree(root: Command): Node[] {
  const nodes: Node[] = [];
  const walk = (cmd: Command, path: string, parent?: Command) => {
    const help = cmd.createHelp();
    const subs = help.visibleCommands(cmd);
    // the implicit `help [command]` completes its parent's commands
    const isHelp = parent && cmd.name() === 'help' && !parent.commands.includes(cmd);
    const commands = isHelp
      ? parent.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden)
      : subs;
    nodes.push({
      path,
      commands: [
        ...commands.map((c) => ({ name: c.name(), description: brief(help.subcommandDescription(c)) })),
        // an argument's choices (completion's shells) are offered as its commands are
        ...cmd.registeredArguments.flatMap((a) =>
          (a.argChoices ?? []).map((name) => ({ name, description: brief(a.description) })),
        ),
      ],
      flags: help.visibleOptions(cmd).map(flagOf),
    });
    if (!isHelp) for (const c of subs) walk(c, `${path} ${c.name()}`, cmd);
  };
  walk(root, root.name());
  return nodes;
}

/** Single-quoted for bash and zsh. */
const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
/** Single-quoted for fish (which escapes inside single quotes). */
const fq = (s: string) => `'${s.replace(/[\\']/g, (c) => `\\${c}`)}'`;
/** A shell function name from the program's name. */
const fn = (name: string) => `_${name.replace(/[^A-Za-z0-9_]/g, '_')}`;

/**
 * The flags that take a value, as case patterns "command path|flag" grouped by what completes
 * their value (one case per choice list, one for files, one for anything).
 */
function flagValues(nodes: Node[], then: (flag: Flag) => string): [string, string][] {
  const groups = new Map<string, string[]>();
  for (const n of nodes)
    for (const flag of n.flags) {
      if (flag.value === 'none') continue;
      const t = then(flag);
      groups.set(t, [...(groups.get(t) ?? []), ...flag.names.map((x) => sq(`${n.path}|${x}`))]);
    }
  return [...groups].map(([t, patterns]) => [patterns.join('|'), t]);
}

function bash(root: Command, nodes: Node[]): string {
  const name = root.name();
  const f = fn(name);
  const paths = nodes.slice(1).map((n) => sq(n.path));
  const values = flagValues(nodes, (flag) =>
    flag.value === 'choices'
      ? `COMPREPLY=($(compgen -W ${sq(flag.choices.join(' '))} -- "$cur"))`
      : flag.value === 'files'
        ? `compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))`
        : 'COMPREPLY=()',
  ).map(([when, then]) => `    ${when}) ${then}; return ;;`);
  const words = nodes.map(
    (n) =>
      `    ${sq(n.path)}) cmds=${sq(n.commands.map((c) => c.name).join(' '))} flags=${sq(n.flags.flatMap((x) => x.names).join(' '))} ;;`,
  );
  return `# bash completion for ${name}, made by \`${name} completion bash\` from its commands and flags.
# Load it in this shell:  source <(${name} completion bash)
# or for every shell:      ${name} completion bash > ~/.local/share/bash-completion/completions/${name}
${f}() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} cmdpath=${sq(name)} cmds flags w i
  # the command typed so far: the words that name a command, below the one before them
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=\${COMP_WORDS[i]}
    [[ $w == -* ]] && continue
    case "$cmdpath $w" in
    ${paths.join('|')}) cmdpath="$cmdpath $w" ;;
    esac
  done
  # the value of a flag: its choices, files for a path, else nothing to offer
  case "$cmdpath|$prev" in
${values.join('\n')}
  esac
  case "$cmdpath" in
${words.join('\n')}
  esac
  # commands, or the flags once a dash is typed (or when the command has no commands)
  if [[ $cur == -* || -z $cmds ]]; then cmds=$flags; fi
  COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
}
complete -F ${f} ${name}
`;
}

function zsh(root: Command, nodes: Node[]): string {
  const name = root.name();
  const f = fn(name);
  const paths = nodes.slice(1).map((n) => sq(n.path));
  const values = flagValues(nodes, (flag) =>
    flag.value === 'choices'
      ? `compadd -- ${flag.choices.map(sq).join(' ')}`
      : flag.value === 'files'
        ? '_files'
        : ':',
  ).map(([when, then]) => `    (${when}) ${then}; return ;;`);
  // _describe's "name:description", a colon in the name escaped
  const item = (n: string, d: string) => sq(`${n.replace(/:/g, '\\:')}:${d}`);
  const lists = nodes.map(
    (n) =>
      `    (${sq(n.path)})\n      cmds=(${n.commands.map((c) => item(c.name, c.description)).join(' ')})\n      opts=(${n.flags.flatMap((x) => x.names.map((y) => item(y, x.description))).join(' ')}) ;;`,
  );
  return `#compdef ${name}
# zsh completion for ${name}, made by \`${name} completion zsh\` from its commands and flags.
# Load it in this shell:  source <(${name} completion zsh)   (after compinit)
# or for every shell:      ${name} completion zsh > "\${fpath[1]}/_${name}"
${f}() {
  local cmdpath=${sq(name)} prev=\${words[CURRENT-1]} w i
  local -a cmds opts
  # the command typed so far: the words that name a command, below the one before them
  for ((i = 2; i < CURRENT; i++)); do
    w=\${words[i]}
    [[ $w == -* ]] && continue
    case "$cmdpath $w" in
    (${paths.join('|')}) cmdpath="$cmdpath $w" ;;
    esac
  done
  # the value of a flag: its choices, files for a path, else nothing to offer
  case "$cmdpath|$prev" in
${values.join('\n')}
  esac
  case "$cmdpath" in
${lists.join('\n')}
  esac
  if [[ \${words[CURRENT]} == -* ]] || (( \${#cmds} == 0 )); then
    _describe -t options option opts
  else
    _describe -t commands command cmds
  fi
}
if [[ \${funcstack[1]} == ${f} ]]; then ${f} "$@"; else compdef ${f} ${name}; fi
`;
}

function fish(root: Command, nodes: Node[]): string {
  const name = root.name();
  const f = `_${fn(name)}`;
  const lines: string[] = [];
  for (const n of nodes) {
    const when = `-n ${fq(`${f}_at "${n.path}"`)}`;
    for (const c of n.commands)
      lines.push(`complete -c ${name} ${when} -a ${fq(c.name)} -d ${fq(c.description)}`);
    for (const x of n.flags) {
      const names = [x.short && `-s ${x.short.slice(1)}`, x.long && `-l ${x.long.slice(2)}`].filter(Boolean);
      const value =
        x.value === 'choices'
          ? `-x -a ${fq(x.choices.join(' '))}`
          : x.value === 'files'
            ? '-r -F'
            : x.value === 'any'
              ? '-x'
              : '';
      lines.push(
        [`complete -c ${name}`, when, ...names, value, `-d ${fq(x.description)}`].filter(Boolean).join(' '),
      );
    }
  }
  return `# fish completion for ${name}, made by \`${name} completion fish\` from its commands and flags.
# Load it in this shell:  ${name} completion fish | source
# or for every shell:      ${name} completion fish > ~/.config/fish/completions/${name}.fish
set -g ${f}_commands ${nodes
    .slice(1)
    .map((n) => fq(n.path))
    .join(' ')}
# the command typed so far: the words that name a command, below the one before them
function ${f}_path
    set -l cmdpath ${fq(name)}
    set -l words (commandline -opc)
    set -e words[1]
    for w in $words
        string match -q -- '-*' $w; and continue
        contains -- "$cmdpath $w" $${f}_commands; and set cmdpath "$cmdpath $w"
    end
    echo $cmdpath
end
function ${f}_at
    test (${f}_path) = "$argv[1]"
end
complete -c ${name} -f
${lines.join('\n')}
`;
}

export function completionScript(shell: Shell, root: Command): string {
  const nodes = commandTree(root);
  return shell === 'bash' ? bash(root, nodes) : shell === 'zsh' ? zsh(root, nodes) : fish(root, nodes);
}
