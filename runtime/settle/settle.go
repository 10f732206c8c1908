// Package settle says which protected objects may skip the deletion webhook.
//
// An object is settled when the webhook has proven that nothing references
// it under the rules that protect its type. The webhook then labels it with
// SettledLabel, whose value is the Stamp of those rules, and the deletion
// webhook's object selector (Selector) sends the DELETE of every object
// except those settled under a stamp it accepts. So deleting a settled
// object costs what deleting an unprotected one does.
//
// Three things keep the label honest:
//   - every write that newly references an object records an intent on it
//     before it is admitted, and the same patch removes the label;
//   - a change of the rules changes the stamp, which unsettles every object
//     of the type at once, so no label made under other rules is trusted,
//     except that of rules that only lost some since (Keeps), and, for a
//     while, that of rules that only gained some (Bridges), whose new rules
//     are not Ready meanwhile: a stamp of theirs may stay accepted beside
//     the current one (Publication), and PublishedGuard ends a bridge;
//   - only the webhook may set or change the label: the guard entry
//     (GuardCondition) sends every other write that does to the webhook,
//     which refuses it.
package settle
