package v1alpha1

// How the controller marks the reference index configuration it writes, so
// that the webhook can tell whether the configuration a rule's indexEpoch
// names is still in place as the controller left it.
const (
	// IndexWebhookName is the name of the single webhook inside each
	// reference index configuration; kcp names it when a write fails
	// because of it.
	IndexWebhookName = "reference-index." + Group
	// WrittenGenerationAnnotation records the generation of a reference
	// index configuration as the controller last wrote it. The server
	// raises the generation on every change to the webhooks, so a
	// configuration whose generation differs was changed by someone else
	// since, even if it was changed back: writes may have skipped the
	// index meanwhile.
	WrittenGenerationAnnotation = Group + "/written-generation"
)
