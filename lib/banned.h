/* Functions that make overflow easy; use snprintf, memcpy with checked sizes,
 * or fbuf instead. */
#ifndef FERRY_BANNED_H
#define FERRY_BANNED_H
#undef strcpy
#define strcpy(a, b) BANNED_strcpy
#undef strcat
#define strcat(a, b) BANNED_strcat
#undef sprintf
#define sprintf(...) BANNED_sprintf
#undef vsprintf
#define vsprintf(...) BANNED_vsprintf
#undef strtok
#define strtok(a, b) BANNED_strtok
#undef gets
#define gets(a) BANNED_gets
#endif
