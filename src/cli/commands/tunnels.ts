import { Command, Option } from 'commander';
import { collect } from '../../api/client.ts';
import type { Tunnel } from '../../api/schemas/agents.ts';
import { explain } from '../agent-commands.ts';
import { clientFrom, nonEmptyId, withApiOptions } from '../api-options.ts';
import type { CliIO } from '../io.ts';
import { age, type Column, parseFormat, render } from '../output.ts';

const columns = (now: number): Column<Tunnel>[] => [
  { name: 'ID', value: (t) => t.id },
  {
    name: 'URL/LABELS',
    value: (t) =>
      t.public_url ??
      Object.entries(t.labels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
  },
  { name: 'FORWARDS TO', value: (t) => t.forwards_to },
  { name: 'PROTO', value: (t) => t.proto ?? '' },
  { name: 'REGION', value: (t) => t.region },
  { name: 'SESSION', value: (t) => t.tunnel_session.id, wide: true },
  { name: 'BACKENDS', value: (t) => (t.backends ?? []).map((b) => b.id).join(','), wide: true },
  { name: 'AGE', value: (t) => age(t.started_at, now) },
];
const output = () => new Option('-o, --output <format>', 'table, wide, json or yaml').default('table');

export function tunnelsCommand(io: CliIO): Command {
  const cmd = new Command('tunnels').description('Online tunnels');
  withApiOptions(cmd.command('list').description('list online tunnels'))
    .addOption(output())
    .action(async (o) => {
      const format = parseFormat(o.output);
      const items = await collect(clientFrom(o).tunnels.list()).catch((e) => {
        throw explain(e, 'list tunnels');
      });
      io.out(render(items, columns(io.now()), format, 'tunnels'));
    });
  withApiOptions(
    cmd.command('get').argument('<id>', 'tunnel id (tn_...)', nonEmptyId).description('show one tunnel'),
  )
    .addOption(output())
    .action(async (id: string, o) => {
      const format = parseFormat(o.output);
      const t = await clientFrom(o)
        .tunnels.get(id)
        .catch((e) => {
          throw explain(e, `get ${id}`);
        });
      io.out(render([t], columns(io.now()), format, 'tunnels'));
    });
  return cmd;
}
