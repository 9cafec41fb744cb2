// Entry point: wires the aspace-gpu debugger, its lane focus UI and memory
// views into VS Code.

import * as vscode from 'vscode';
import { AddressSpaceLens } from './addressSpaceLens';
import { AspaceAdapterFactory } from './adapterFactory';
import { AspaceConfigurationProvider, pickStateDump } from './configurationProvider';
import { GpuDebugController } from './controller';
import { registerLaneCommands } from './laneCommands';
import { LaneValuesPanels } from './laneValuesPanel';
import { createLanesView } from './lanesView';
import { createWavesView } from './wavesView';
import { DEBUG_TYPE, PICK_STATE_COMMAND } from './launchConfig';
import { registerMemoryCommands } from './memoryCommands';
import { createLaneStatusBar } from './statusBar';

let lens: AddressSpaceLens | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('aspace GPU Debugger');
  const lensLog = vscode.window.createOutputChannel('aspace Address-Space Lens');
  lens = new AddressSpaceLens(lensLog);
  const controller = new GpuDebugController(log);
  const panels = new LaneValuesPanels(controller);
  const configurations = new AspaceConfigurationProvider(log);
  context.subscriptions.push(
    log,
    lensLog,
    controller,
    panels,
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, new AspaceAdapterFactory(log)),
    vscode.debug.registerDebugAdapterTrackerFactory(DEBUG_TYPE, controller),
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, configurations),
    // A separate provider for the Run and Debug dropdown, so that resolving
    // a configuration does not run twice.
    vscode.debug.registerDebugConfigurationProvider(
      DEBUG_TYPE,
      { provideDebugConfigurations: () => configurations.provideDebugConfigurations() },
      vscode.DebugConfigurationProviderTriggerKind.Dynamic,
    ),
    vscode.commands.registerCommand(PICK_STATE_COMMAND, pickStateDump),
    createLaneStatusBar(controller),
    createLanesView(controller),
    createWavesView(controller, log),
    registerLaneCommands(controller, panels),
    registerMemoryCommands(controller),
  );
  void lens.update();
}

/** Everything else is disposed through context.subscriptions; the lens's server is awaited. */
export function deactivate(): Promise<void> | undefined {
  const stopping = lens?.shutdown();
  lens = undefined;
  return stopping;
}
