/**
 * The server's "Profile cell" lenses and `gpulens.profileCell` / `gpulens.clearProfile`
 * commands, routed through the client: a profile goes through the client's profiler (its
 * progress, the workspace trust check), a clear also clears the client's tint.
 */

import { SERVER_CLEAR_COMMAND, SERVER_PROFILE_COMMAND } from './profiler';

/** A server lens or command `gpulens.profileCell {uri, line}` goes through the client's profiler. */
export function profileCommandArguments(
  command: string,
  args: unknown[],
): [string, number] | undefined {
  if (command !== SERVER_PROFILE_COMMAND) return undefined;
  const first = args[0];
  if (typeof first !== 'object' || first === null) return undefined;
  const { uri, line } = first as { uri?: unknown; line?: unknown };
  return typeof uri === 'string' && typeof line === 'number' ? [uri, line] : undefined;
}

/** The document of a server `gpulens.clearProfile {uri}`, whose tint the client clears too. */
export function clearedDocument(command: string, args: unknown[]): string | undefined {
  if (command !== SERVER_CLEAR_COMMAND) return undefined;
  const first = args[0];
  if (typeof first === 'string') return first;
  const uri =
    typeof first === 'object' && first !== null ? (first as { uri?: unknown }).uri : undefined;
  return typeof uri === 'string' ? uri : undefined;
}
