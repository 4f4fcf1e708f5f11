/**
 * Who decided an operator action and why, and the action as recorded (README "For operators"). The
 * updates that carry them are defined in workflows/operator-actions.ts; these types are written here,
 * below the scheme folders, because a settlement's recorded outcome lists its operator actions.
 */
export interface OperatorDecision {
  /** Who decided (a name or e-mail: recorded, not authenticated; Temporal access is the gate). */
  operator: string;
  /** Why, in the operator's words. */
  reason: string;
}

/** One operator action as recorded (memo `operatorActions`, the workflow's result). */
export interface OperatorAction extends OperatorDecision {
  action: OperatorActionName;
  /** Workflow time (ISO) when the workflow took the action. */
  at: string;
}

export type OperatorActionName = 'retry-deposit' | 'refund' | 'rebroadcast' | 'replace' | 'retry-mint' | 'abandon-bridge';
