_RC_TRAIT_CHAR = '[A-Z0-9_]'
RC_PATTERN = '^%s+$' % _RC_TRAIT_CHAR
CUSTOM_RC_PATTERN = '^CUSTOM_%s+$' % _RC_TRAIT_CHAR
CUSTOM_TRAIT_PATTERN = CUSTOM_RC_PATTERN
CONSUMER_TYPE_PATTERN = RC_PATTERN
CONSUMER_TYPE_GET_PATTERN = '%s|^all|^unknown$' % CONSUMER_TYPE_PATTERN
GROUP_PAT = r'[1-9][0-9]*'
GROUP_PAT_1_33 = r'[a-zA-Z0-9_-]{1,64}'

MAX_INT = 2147483647
# Placement stores allocation_ratio as a single-precision SQL float.
SQL_SP_FLOAT_MAX = 3.40282e+38

UUID = {'type': 'string', 'format': 'uuid'}
UUID_PATTERN = '^[0-9a-fA-F-]{36}$'


# Names of Tachyon's own definitions (weighers, metrics).
TACHYON_NAME_PATTERN = '^[A-Za-z0-9_.-]{1,64}$'

# The largest integer a stored definition may hold: both engines keep
# 64-bit integers, and a number past them stored once (a topology's
# hugepages total of 2**64) broke every read of it for every client.
# JSON's safe integers are far beyond any count or size here.
MAX_INTEGER = 2 ** 53
