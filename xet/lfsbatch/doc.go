// Package lfsbatch holds the Git LFS batch API's JSON shapes (request, response, per-object result,
// action, object error) and the Hub-style xet extension: the X-Xet-* header names and XetAction, the
// CAS a xet action names, built by a server and parsed by a client. The server (xet/server), the
// Hub client (agent/hub), migration (agent/migrate) and the agent speak through these types, so
// they cannot drift apart.
//
// Readers are liberal: unknown fields are ignored, optional fields may be missing, an action may
// carry expires_at as well as expires_in, and header names match case-insensitively. Writers are
// strict: only the fields a shape defines, optional ones omitted when unset.
package lfsbatch
