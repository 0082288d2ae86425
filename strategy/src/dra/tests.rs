//! Table tests of the DRA rules, each asserting upstream's exact message.
