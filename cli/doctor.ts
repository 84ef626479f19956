import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type CheckResult, runPreflight } from '../shared/doctor/preflight.js';

/**
 * `cld doctor` / `npm run doctor`: the preflight of shared/doctor/preflight.ts, printed one line
 * per check with its fix. Options: `--region`, `--model` (default: `cld:modelId` of cdk.json),
 * `--qualifier` (CDK bootstrap), `--api-url` and `--token` (after deploy: the smoke question),
 * `--json`. Exit code 0 when no check failed (warnings included), 1 when one did, 2 for bad usage.
 */
export const DOCTOR_USAGE = `usage: cld doctor [--region <region>] [--model <model id>] [--qualifier <cdk qualifier>]
                  [--api-url <ApiUrl output> --token <JWT>] [--json]
  checks credentials and Region, CDK bootstrap, the model (Region, first use, access),
  the Lambda concurrency quota and, with --api-url, a smoke question through the deployed API`;

const MARKS: Record<CheckResult['status'], string> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL', skip: 'skip' };

/** The model `cdk deploy` would use: cdk.json's `cld:modelId`. */
function defaultModel(): string {
  const root = join(fileURLToPath(new URL('.', import.meta.url)), '..');
  const cdk = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')) as {
    context?: Record<string, unknown>;
  };
  const model = cdk.context?.['cld:modelId'];
  return typeof model === 'string' ? model : 'offline';
}

/**
 * Runs the preflight for the given arguments and prints the report.
 * @param args the arguments after `doctor`
 * @param write where lines go (default: standard output)
 * @returns the exit code (0 ok or warnings, 1 a check failed, 2 bad usage)
 */
export async function doctorCommand(
  args: string[],
  write: (line: string) => void = console.log,
): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        region: { type: 'string' },
        model: { type: 'string' },
        qualifier: { type: 'string' },
        'api-url': { type: 'string' },
        token: { type: 'string' },
        json: { type: 'boolean' },
      },
    }));
  } catch (error) {
    write(`cld doctor: ${(error as Error).message}\n${DOCTOR_USAGE}`);
    return 2;
  }
  const apiUrl = values['api-url'] as string | undefined;
  if (apiUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(apiUrl)) {
    write(`cld doctor: --api-url must be an http(s) URL (the stack's ApiUrl output)\n${DOCTOR_USAGE}`);
    return 2;
  }
  const qualifier = values.qualifier as string | undefined;
  if (qualifier !== undefined && !/^[A-Za-z0-9_-]{1,10}$/.test(qualifier)) {
    write('cld doctor: --qualifier is 1–10 letters, digits, "_" or "-" (CDK bootstrap qualifier)');
    return 2;
  }
  const results = await runPreflight({
    modelId: (values.model as string | undefined) ?? defaultModel(),
    ...(values.region ? { region: values.region as string } : {}),
    ...(qualifier ? { qualifier } : {}),
    ...(apiUrl ? { apiUrl } : {}),
    ...(values.token ? { token: values.token as string } : {}),
  });
  if (values.json) write(JSON.stringify(results, null, 2));
  else
    for (const result of results) {
      write(`${MARKS[result.status]}  ${result.id.padEnd(12)} ${result.message}`);
      if (result.fix && result.status !== 'ok') write(`      ${''.padEnd(12)} fix: ${result.fix}`);
    }
  return results.some((r) => r.status === 'fail') ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  doctorCommand(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(`cld doctor: ${(error as Error).message}`);
      process.exitCode = 1;
    },
  );
}
