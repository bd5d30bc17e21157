// A vitest reporter for the emulated arm64 run (scripts/test-arm64.mjs): it appends one line per
// test file and test as each starts and ends to the file named by LITETOPIC_ARM64_PROGRESS, so the
// script watching the run from outside the emulator knows when the run last moved and, if it stops
// moving, which tests were running and which had failed. vitest's own reporter prints a test file
// only when all of it has ended, which says nothing about a run that hangs.
import { appendFileSync } from 'node:fs';

const file = process.env.LITETOPIC_ARM64_PROGRESS;

function note(event, name, state) {
  if (file !== undefined) appendFileSync(file, `${JSON.stringify({ at: Date.now(), event, name, state })}\n`);
}

export default class ProgressReporter {
  onTestModuleStart(testModule) {
    note('file-start', testModule.moduleId);
  }

  onTestModuleEnd(testModule) {
    note('file-end', testModule.moduleId, testModule.state());
  }

  onTestCaseReady(testCase) {
    note('test-start', `${testCase.module.moduleId} > ${testCase.fullName}`);
  }

  onTestCaseResult(testCase) {
    note('test-end', `${testCase.module.moduleId} > ${testCase.fullName}`, testCase.result().state);
  }
}
