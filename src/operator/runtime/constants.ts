// Names the runtime writes onto every object, whatever its kind.
export const GROUP = 'edge.tunnel.dev';
export const VERSION = 'v1alpha1';
/** The Kubernetes resource path of a managed kind. */
export const managedResource = (plural: string) => ({ group: GROUP, version: VERSION, plural });
export const FINALIZER = `${GROUP}/finalizer`;
/** The remote resource's id: set by the operator, or by a person to adopt one. */
export const ID_ANNOTATION = `${GROUP}/id`;
/** Set before an API create and removed once the id is recorded: a crash in between is recovered. */
export const CREATE_PENDING_ANNOTATION = `${GROUP}/create-pending`;
/** Deletes the remote resource even while other objects still reference this one. */
export const FORCE_DELETE_ANNOTATION = `${GROUP}/force-delete`;
/** "true": no API call and no Kubernetes write for the object until removed (deletes wait). */
export const PAUSED_ANNOTATION = `${GROUP}/paused`;
/** Any new value: observe (a GET) and sync the object now; status records the value handled. */
export const RECONCILE_REQUESTED_ANNOTATION = `${GROUP}/reconcile-requested-at`;
/** Partitions objects between installations in one cluster (like an IngressClass). */
export const INSTANCE_LABEL = `${GROUP}/instance`;

/** The EdgeAccount a namespace's objects use when they name none (and the installation's account is off). */
export const DEFAULT_ACCOUNT_NAME = 'default';
