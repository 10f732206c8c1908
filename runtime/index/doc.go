// Package index keeps the reference records that make deciding a DELETE
// cheap and safe (package decision reads them):
//
//   - Indexer, the mutating admission endpoint, labels each dependent on
//     create and update with what it references (registry.Schema), and
//     records an intent on each object a write newly references, refusing
//     the write when that object is being deleted; a deletion of the
//     dependent withdraws its intents.
//   - Intents (intent.go, judge.go) are what a write records on each object
//     it newly references: one annotation per write, standing for that
//     write until it is stored (the architecture guide's "Intents:
//     references on their way"); Judge tells whether one still stands.
//   - Reindexer writes again, in the background, the dependents a deletion
//     had to read in full for want of a current index stamp.
//   - Configurations tells the registry which reference index
//     configurations are intact, so that a rule's index epoch is trusted
//     only while its configuration is.
//
// The index is a shortcut, never the ground truth: a dependent without a
// current stamp is read in full, and an intent only ever holds a deletion
// up until it is withdrawn or expires.
package index
