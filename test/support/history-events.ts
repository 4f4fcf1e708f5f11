import type { temporal } from '@temporalio/proto';

type Events = temporal.api.history.v1.IHistoryEvent[];

/** The markers of one kind in a history: 'core_local_activity' (one per local activity), 'core_patch'. */
export const markersNamed = (events: Events, name: string): Events =>
  events.filter((e) => e.markerRecordedEventAttributes?.markerName === name);

/** The ids of a history's patch markers, in order (each marker carries its id in `patch-data`). */
export const patchIds = (events: Events): string[] =>
  markersNamed(events, 'core_patch').map(
    (e) => JSON.parse(Buffer.from(e.markerRecordedEventAttributes!.details!['patch-data'].payloads![0].data!).toString()).id as string,
  );
