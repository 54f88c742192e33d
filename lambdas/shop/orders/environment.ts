/** The PlaceOrder function's own variable; the outbox's (OUTBOX_TABLE_NAME, …) are set by `grantWrite`. */
export const ORDERS_ENVIRONMENT = {
  ordersTableName: 'ORDERS_TABLE_NAME',
} as const;
