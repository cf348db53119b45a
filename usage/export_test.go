package usage

// LedgerCost prices t as the ledger does (through its index).
func LedgerCost(p Prices, provider, model string, t Tokens) *float64 {
	return indexPrices(p).cost(provider, model, t)
}

// RecordCost prices r as Ledger.Record does.
func RecordCost(p Prices, r *Record) *float64 {
	return (&Ledger{prices: indexPrices(p)}).price(r)
}
